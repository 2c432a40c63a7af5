import Foundation
import LVBCore
import LVBCrypto
@testable import LVBReplay
import LVBTestSupport
import LVBTransport
import Testing

/// Players and holders over real sessions on the virtual network.
@Suite struct ReplayExchangeTests {
    /// A replay of `seconds` (made of stand-in frames: the exchange never decodes)
    /// copied into each holder's own directory.
    static func replay(seconds: Int, holders: Int, offset: UInt64 = 0, isPrivate: Bool = false) throws -> (ReplayID, [String]) {
        let base = ReplayRecorderTests.temporaryDirectory()
        let r = try ReplayRecorderTests.recorder(base, isPrivate: isPrivate)
        let random = SeededRandom(seed: 29)
        for n in 0..<(seconds * 30) {
            let at = ReplayRecorderTests.start + offset + UInt64(n) * 33_333
            r.video(random.bytes(n % 30 == 0 ? 6000 : 1500), keyframe: n % 30 == 0, captureMicros: at)
            if n % 3 == 0 { r.audio(random.bytes(80), captureMicros: at) }
        }
        r.finish()
        let id = try #require(r.id)
        let dirs = (0..<holders).map { base + "-holder\($0)" }
        for dir in dirs { try FileManager.default.copyItem(atPath: base, toPath: dir) }
        try FileManager.default.removeItem(atPath: base)
        return (id, dirs)
    }

    final class Room {
        let net: VirtualNetwork
        let player: SimulatedNode
        let holders: [SimulatedNode]
        var servers: [ReplayServer] = []
        let fetcher: ReplayFetcher
        var manifest: ReplayManifest?
        var segments: [Int: [UInt8]] = [:]
        var dropped: [(NodeID, String)] = []
        var ticker: TimerHandle?
        /// Rewrites what a holder sends (a lying holder).
        var tamper: [NodeID: ([UInt8]) -> [UInt8]] = [:]

        init(id: ReplayID, dirs: [String], loss: Double = 0) {
            net = VirtualNetwork(seed: 290, defaultImpairment: Impairment(loss: loss, delay: .milliseconds(10), jitter: .milliseconds(2)))
            let nodes = net.makeNodes(dirs.count + 1, seed: 290)
            player = nodes[0]
            holders = Array(nodes.dropFirst())
            fetcher = ReplayFetcher(id: id, clock: net.clock) { [player] peer, bytes in try? player.core.send(bytes, channel: .replay, to: peer) }
            for (node, dir) in zip(holders, dirs) {
                let server = ReplayServer(library: ReplayLibrary(root: dir), clock: net.clock) { [unowned self] peer, bytes in
                    try? node.core.send(tamper[node.id]?(bytes) ?? bytes, channel: .replay, to: peer)
                }
                servers.append(server)
                node.onTransportEvent = { if case let .message(peer, .replay, payload) = $0 { server.receive(payload, from: peer) } }
                player.core.connect(to: node.address, expecting: node.id)
                fetcher.addHolder(node.id)
            }
            player.onTransportEvent = { [unowned self] e in
                switch e {
                case let .message(peer, .replay, payload): fetcher.receive(payload, from: peer)
                case let .gone(peer, _): fetcher.removeHolder(peer)
                default: break
                }
            }
            fetcher.onEvent = { [unowned self] e in
                switch e {
                case let .manifest(m):
                    manifest = m
                    fetcher.want(Array(m.segments.indices))
                case let .segment(i, bytes): segments[i] = bytes
                case let .dropped(peer, why): dropped.append((peer, why))
                }
            }
            ticker = net.every(.milliseconds(20)) { [unowned self] in fetcher.tick() }
        }

        var complete: Bool { manifest.map { segments.count == $0.segments.count } ?? false }
    }

    @Test func theMessagesRoundTripAndEveryBadFieldIsRefused() throws {
        let id = ReplayID.derive(room: ReplayFormatTests.room, host: ReplayFormatTests.host.nodeID, startedMs: 1)
        let messages: [ReplayMessage] = [.request(id, index: 3, first: 7, count: 64), .missing(id, index: .max),
                                         .chunk(id, index: 0, chunk: 1, total: 1500, data: [UInt8](repeating: 9, count: 476)[...])]
        for m in messages { #expect(try ReplayMessage.parse(m.bytes[...]) == m) }
        let bad: [[UInt8]] = [
            ReplayMessage.request(id, index: 0, first: 0, count: 1).bytes.dropLast(2) + [0, 0, 65],      // 65 chunks
            ReplayMessage.request(id, index: 0, first: 0, count: 1).bytes.dropLast() + [0],              // none
            ReplayMessage.chunk(id, index: 0, chunk: 1, total: 1500, data: [UInt8](repeating: 9, count: 477)[...]).bytes,  // too long for the last
            ReplayMessage.chunk(id, index: 0, chunk: 0, total: 1500, data: [UInt8](repeating: 9, count: 1000)[...]).bytes, // short, not last
            ReplayMessage.chunk(id, index: 0, chunk: 2, total: 1500, data: [9][...]).bytes,                                 // past the end
            ReplayMessage.missing(id, index: 0).bytes + [0], [4] + id.bytes + [0, 0, 0, 0], [1, 2, 3]]
        for (n, b) in bad.enumerated() { #expect(throws: ReplayError.self, "case \(n)") { try ReplayMessage.parse(b[...]) } }
    }

    @Test func aPlayerFetchesFromThreeHoldersAndTheLoadSpreads() throws {
        let (id, dirs) = try Self.replay(seconds: 24, holders: 3)
        defer { for d in dirs { try? FileManager.default.removeItem(atPath: d) } }
        let room = Room(id: id, dirs: dirs, loss: 0.02)
        #expect(room.net.run(until: { room.complete }, timeout: .seconds(20)))
        let m = try #require(room.manifest)
        #expect(m.segments.count == 12)
        let held = try ReplayLibrary(root: dirs[0]).replay(id)
        for i in m.segments.indices { #expect(room.segments[i] == (try ReplayLibrary(root: dirs[0]).segment(held, i))) }
        // Each of the three served about a third.
        let total = Double(room.fetcher.stats.bytesFrom.values.reduce(0, +))
        for h in room.holders {
            let share = Double(room.fetcher.stats.bytesFrom[h.id] ?? 0) / total
            #expect(share <= 1.0 / 3 + 0.1 && share >= 1.0 / 3 - 0.1, "\(share)")
        }
        #expect(room.dropped.isEmpty)
    }

    @Test func aHolderThatServesAlteredBytesIsDroppedAndTheOthersServe() throws {
        let (id, dirs) = try Self.replay(seconds: 12, holders: 3)
        defer { for d in dirs { try? FileManager.default.removeItem(atPath: d) } }
        let room = Room(id: id, dirs: dirs)
        let liar = room.holders[1]
        room.tamper[liar.id] = { bytes in
            guard case let .chunk(rid, index, chunk, total, data)? = try? ReplayMessage.parse(bytes[...]), index != ReplayMessage.manifestIndex else { return bytes }
            var altered = Array(data)
            altered[altered.count / 2] ^= 0x5A
            return ReplayMessage.chunk(rid, index: index, chunk: chunk, total: total, data: altered[...]).bytes
        }
        #expect(room.net.run(until: { room.complete }, timeout: .seconds(20)))
        #expect(room.dropped.map(\.0) == [liar.id])
        #expect(room.dropped.first?.1.contains("does not match its manifest's hash") == true)
        // It served the manifest (signed: it could not alter it), and nothing after.
        let manifestBytes = try #require(room.manifest).signed(by: ReplayFormatTests.host).count
        #expect(room.fetcher.stats.badFiles == 1 && (room.fetcher.stats.bytesFrom[liar.id] ?? 0) <= manifestBytes)
        let held = try ReplayLibrary(root: dirs[0]).replay(id)
        for (i, bytes) in room.segments { #expect(bytes == (try ReplayLibrary(root: dirs[0]).segment(held, i))) }
    }

    @Test func aHolderThatDiesMidFetchCostsUnderASecond() throws {
        let (id, dirs) = try Self.replay(seconds: 24, holders: 2)
        defer { for d in dirs { try? FileManager.default.removeItem(atPath: d) } }
        let room = Room(id: id, dirs: dirs)
        room.fetcher.parallel = 1
        #expect(room.net.run(until: { room.segments.count >= 3 }, timeout: .seconds(10)))
        // Each segment's arrival, with one holder dead from now on.
        room.holders[0].crash()
        var arrivals: [Instant] = [room.net.clock.now()]
        var seen = room.segments.count
        let done = room.net.run(until: {
            if room.segments.count > seen { seen = room.segments.count; arrivals.append(room.net.clock.now()) }
            return room.complete
        }, timeout: .seconds(20))
        #expect(done)
        let longest = zip(arrivals, arrivals.dropFirst()).map { $1 - $0 }.max() ?? .zero
        #expect(longest < .seconds(1), "the longest wait for a segment was \(longest)")
    }

    /// A private room's replay is its host's alone: no holder serves it.
    @Test func aPrivateRoomsReplayIsNeverServed() throws {
        let (id, dirs) = try Self.replay(seconds: 4, holders: 1, isPrivate: true)
        defer { for d in dirs { try? FileManager.default.removeItem(atPath: d) } }
        #expect(try ReplayLibrary(root: dirs[0]).replay(id).manifest.info.isPrivate)
        let room = Room(id: id, dirs: dirs)
        room.net.run(for: .seconds(2))
        #expect(room.manifest == nil && room.servers[0].stats.missing >= 1 && room.servers[0].stats.chunksSent == 0)
    }

    @Test func aFileNotHeldIsSaidSoAndAForgedManifestIsRefused() throws {
        let (id, dirs) = try Self.replay(seconds: 4, holders: 2)
        defer { for d in dirs { try? FileManager.default.removeItem(atPath: d) } }
        // The first holder lost its copy; the second holds it.
        try FileManager.default.removeItem(atPath: dirs[0] + "/" + id.text)
        let room = Room(id: id, dirs: dirs)
        #expect(room.net.run(until: { room.complete }, timeout: .seconds(10)))
        #expect(room.servers[0].stats.missing >= 1 && room.dropped.isEmpty)
        // A holder that answers with a manifest signed by someone else is dropped.
        let (other, otherDirs) = try Self.replay(seconds: 4, holders: 1, offset: 60_000_000)
        defer { for d in otherDirs { try? FileManager.default.removeItem(atPath: d) } }
        try FileManager.default.moveItem(atPath: otherDirs[0] + "/" + other.text, toPath: otherDirs[0] + "/" + id.text)
        let liar = Room(id: id, dirs: otherDirs)
        // Its server finds the directory's manifest is of another replay and says missing: nothing forged gets out.
        liar.net.run(for: .seconds(3))
        #expect(liar.manifest == nil && liar.servers[0].stats.missing >= 1)
        // One that alters the manifest on the way is dropped for it.
        let altering = Room(id: id, dirs: [dirs[1]])
        altering.tamper[altering.holders[0].id] = { bytes in
            guard case let .chunk(rid, index, chunk, total, data)? = try? ReplayMessage.parse(bytes[...]) else { return bytes }
            var altered = Array(data)
            altered[altered.count - 1] ^= 1
            return ReplayMessage.chunk(rid, index: index, chunk: chunk, total: total, data: altered[...]).bytes
        }
        altering.net.run(for: .seconds(3))
        #expect(altering.manifest == nil && altering.dropped.map(\.0) == [altering.holders[0].id])
    }
}
