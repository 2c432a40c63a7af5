#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FuzzWorld
import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRendezvous
import LVBRoom
import LVBTestSupport
import LVBTransport

// Writes the seed corpora: a handful of small valid inputs per fuzz target,
// captured from real sessions on the virtual network (deterministic seeds, so
// rerunning gives the same files). Usage:
//
//   swift run --package-path Fuzz MakeCorpus [corpus-dir]   (default Fuzz/Corpus)

@main enum MakeCorpus {
    static func main() throws {
        // Fuzz/Sources/MakeCorpus/MakeCorpus.swift → Fuzz/Corpus
        let defaultDir = String(#filePath.split(separator: "/", omittingEmptySubsequences: false)
            .dropLast(3).joined(separator: "/")) + "/Corpus"
        let dir = CommandLine.arguments.dropFirst().first ?? defaultDir
        let corpora = [
            "FuzzPacket": try packetSeeds(),
            "FuzzTicket": try ticketSeeds(),
            "FuzzReceive": try receiveSeeds(),
            "FuzzEvent": try eventSeeds(),
            "FuzzGossip": try gossipSeeds(),
            "FuzzMedia": try mediaSeeds(),
            "FuzzMediaReceive": try mediaReceiveSeeds(),
            "FuzzRoom": try roomSeeds(),
            "FuzzRendezvous": try rendezvousSeeds(),
        ]
        for (target, seeds) in corpora {
            let targetDir = dir + "/" + target
            try makeDirectory(dir)
            try makeDirectory(targetDir)
            for (name, bytes) in seeds.sorted(by: { $0.key < $1.key }) {
                try write(bytes, to: targetDir + "/" + name)
            }
            print("\(target): \(seeds.count) seeds, \(seeds.values.reduce(0) { $0 + $1.count }) bytes → \(targetDir)")
        }
    }

    /// Every datagram delivered on `net`, in order.
    final class Capture {
        var datagrams: [[UInt8]] = []
        init(_ nodes: [SimulatedNode]) {
            for node in nodes {
                let original = node.endpoint.onReceive
                node.endpoint.onReceive = { [unowned self] d, from in
                    datagrams.append(d)
                    original?(d, from)
                }
            }
        }
        func first(_ type: PacketType) -> [UInt8]? { datagrams.first { $0.first == type.rawValue } }
    }

    struct SetupFailed: Error, CustomStringConvertible {
        let description: String
    }

    static func makeDirectory(_ path: String) throws {
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
            throw SetupFailed(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        guard let file = fopen(path, "wb") else {
            throw SetupFailed(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        guard fwrite(bytes, 1, bytes.count, file) == bytes.count else {
            throw SetupFailed(description: "short write to \(path)")
        }
    }

    /// Genuine datagrams of every packet type, plus the inner formats.
    static func packetSeeds() throws -> [String: [UInt8]] {
        var seeds: [String: [UInt8]] = [:]

        // SimulatedNode's callbacks hold it unowned: keep the nodes alive while the network runs.
        let ikNet = VirtualNetwork(seed: 101)
        let ik = ikNet.makeNodes(2, seed: 102)
        let ikCapture = Capture(ik)
        try withExtendedLifetime((ik, ikCapture)) {
            ik[1].core.connect(to: ik[0].address, expecting: ik[0].id)
            ikNet.run(for: .milliseconds(100))
            try ik[1].core.send(Array("chat: hi".utf8), channel: .gossip, to: ik[0].id)
            ikNet.run(for: .milliseconds(100))
        }
        seeds["ik-initiation"] = ikCapture.first(.ikInitiation)
        seeds["ik-response"] = ikCapture.first(.ikResponse)
        let transports = ikCapture.datagrams.filter { $0.first == PacketType.transport.rawValue }
        seeds["transport-keepalive"] = transports.first { $0.count == MessageSize.transportOverhead }
        seeds["transport-data"] = transports.last

        let xxNet = VirtualNetwork(seed: 103)
        let xx = xxNet.makeNodes(2, seed: 104)
        let xxCapture = Capture(xx)
        withExtendedLifetime((xx, xxCapture)) {
            xx[1].core.connect(to: xx[0].address, expecting: nil)
            xxNet.run(for: .milliseconds(100))
        }
        seeds["xx-initiation"] = xxCapture.first(.xxInitiation)
        seeds["xx-response"] = xxCapture.first(.xxResponse)
        seeds["xx-final"] = xxCapture.first(.xxFinal)

        var loaded = TransportConfig()
        loaded.underLoadThreshold = 0   // every initiation gets a cookie reply first
        let cookieNet = VirtualNetwork(seed: 105)
        let cookie = cookieNet.makeNodes(2, seed: 106, config: loaded)
        let cookieCapture = Capture(cookie)
        withExtendedLifetime((cookie, cookieCapture)) {
            cookie[1].core.connect(to: cookie[0].address, expecting: cookie[0].id)
            cookieNet.run(for: .milliseconds(100))
        }
        seeds["cookie-reply"] = cookieCapture.first(.cookieReply)

        seeds["control-hello"] = ControlMessage.hello(Hello(agent: "lvbnode/0.1.0", role: .host)).bytes
        seeds["control-ping"] = ControlMessage.ping(0x0102_0304_0506_0708).bytes
        seeds["control-bye"] = ControlMessage.bye(1).bytes
        let v4 = PeerAddress.ipv4(192, 168, 1, 2, port: 7400), v6 = PeerAddress(host: .v6([0xFD] + [UInt8](repeating: 1, count: 15)), port: 9)
        seeds["introduce-request"] = IntroductionMessage.request(request: 7, peer: ik[0].id, addresses: [v4, v6]).encoded
        seeds["introduce-introduction"] = IntroductionMessage.introduction(request: 7, peer: ik[0].id, relay: true, addresses: [v4]).encoded
        seeds["introduce-relay"] = IntroductionMessage.relay(peer: ik[0].id, piece: RelayPiece(id: 3, index: 1, count: 2, bytes: [1, 2, 3])).encoded
        let id = ik[0].id
        seeds["payload-initiator"] = HandshakePayload.initiator(id: id, timestamp: TAI64N(ManualClock.defaultWallStart))
        seeds["payload-responder"] = id.publicKey

        for name in ["ik-initiation", "ik-response", "transport-keepalive", "transport-data",
                     "xx-initiation", "xx-response", "xx-final", "cookie-reply"] where seeds[name] == nil {
            throw SetupFailed(description: "no \(name) datagram was captured")
        }
        return seeds
    }

    /// RFC 5769's sample request and IPv4 response, the smallest Binding
    /// request, and a signed room announcement.
    static func rendezvousSeeds() throws -> [String: [UInt8]] {
        func hex(_ s: String) -> [UInt8] { (try? Hex.decode(s)) ?? [] }
        let host = try Identity(seed: [UInt8](repeating: 42, count: 32))
        var announcement = RoomAnnouncement(room: try RoomID(bytes: Array(1...16)), host: host.nodeID, seq: 1_700_000_000_000_000,
                                            time: 1_700_000_000_000, viewers: 3, likes: 9,
                                            info: RoomInfo(title: "seed room", startedAt: 1_700_000_000_000), hostNickname: "hana",
                                            addresses: [.ipv4(127, 0, 0, 1, port: 7400)])
        try announcement.sign(with: host)
        return [
            "announcement": announcement.encoded,
            "rfc5769-request": hex("000100582112a442b7e7a701bc34d686fa87dfae802200105354554e20746573742063"
                                   + "6c69656e74002400046e0001ff80290008932ff9b151263b36000600096576746a3a6836"
                                   + "7659202020000800149aeaa70cbfd8cb56781ef2b5b2d3f249c1b571a280280004e57a3bcf"),
            "rfc5769-ipv4-response": hex("0101003c2112a442b7e7a701bc34d686fa87dfae8022000b74657374207665"
                                         + "63746f7220002000080001a147e112a64300080014"
                                         + "2b91f599fd9e90c38c7489f92af9ba53f06be7d780280004c07d4c96"),
            "binding-request": hex("000100002112a442000102030405060708090a0b"),
            "introduce": RendezvousMessage.introduce(request: 7, room: try RoomID(bytes: Array(1...16)),
                                                     addresses: [.ipv4(10, 0, 0, 2, port: 40000)]).encoded,
            "introduction": RendezvousMessage.introduction(request: 7, peer: host.nodeID, relay: true,
                                                           addresses: [.ipv4(203, 0, 113, 5, port: 51000), .ipv4(10, 0, 0, 2, port: 7400)]).encoded,
            "observed": RendezvousMessage.observed(.ipv4(203, 0, 113, 5, port: 51000)).encoded,
            "relay": RendezvousMessage.relay(peer: host.nodeID, piece: RelayPiece(id: 1, index: 0, count: 2,
                                                                                  bytes: [4, 0, 0, 0] + [UInt8](repeating: 0x77, count: 40))).encoded,
            "thumbnail": RendezvousMessage.thumbnail(room: try RoomID(bytes: Array(1...16)), seq: 9,
                                                     piece: ThumbnailPiece(index: 0, count: 2, bytes: [0xFF, 0xD8] + [UInt8](repeating: 0x4A, count: 40))).encoded,
            "thumbnail-request": RendezvousMessage.thumbnailRequest(request: 7, room: try RoomID(bytes: Array(1...16)), have: 0).encoded,
            "thumbnail-none": RendezvousMessage.thumbnailAnswer(request: 7, room: try RoomID(bytes: Array(1...16)), seq: 0, piece: nil).encoded,
        ]
    }

    /// One message of each room-channel type.
    static func roomSeeds() throws -> [String: [UInt8]] {
        let room = [UInt8](1...16)
        let pass = [UInt8](repeating: 0x50, count: 120)
        let event = [UInt8](repeating: 0x45, count: 40)
        let request: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8], signature = [UInt8](repeating: 0x53, count: 64)
        let guest = try Identity(seed: [UInt8](repeating: 9, count: 32)).nodeID.publicKey
        return [
            "request-open": [1] + room + [0],
            "request-password": [1] + room + [1] + [UInt8](repeating: 0x70, count: 32),
            "response-admitted": [2] + room + [0] + pass,
            "response-denied": [2] + room + [1, 4],
            "leaving": [3] + pass + [2, 0, 40] + event + [0, 40] + event,
            "leave-ack": [4, 0, 0, 0, 0, 0, 0, 0, 42],
            "linkmic-request": [5] + room + request + [5] + Array("hello".utf8) + signature,
            "linkmic-answer": [6] + room + request + guest + [2, 7] + Array("not now".utf8) + signature,
            "linkmic-hangup": [7] + room + request + [3] + signature,
            "relay-full": [8],
            "relay-move-down": [9],
            "pass-wanted": [10] + room,
            "relay-redirect": [11, 2] + guest + guest,
            "unknown-type": [200, 1, 2, 3],
        ]
    }

    static func ticketSeeds() throws -> [String: [UInt8]] {
        let random = SeededRandom(seed: 107)
        let host = try Identity(seed: random.bytes(32)).nodeID
        let full = JoinTicket(host: host, addresses: [
            .ipv4(192, 168, 1, 20, port: 7400),
            try PeerAddress(parsing: "[2001:db8::1]:7400"),
        ], fields: [1: Array("room-42".utf8), 9: [0xFF]])
        let small = JoinTicket(host: host, addresses: [.ipv4(127, 0, 0, 1, port: 7400)])
        return [
            "ticket-full": Array(full.text.utf8),
            "ticket-small": Array(small.text.utf8),
            "ticket-upper-spaced": Array("  \(small.text.uppercased())\n".utf8),
            "node-id": Array(host.text.utf8),
            "address-v4": Array("10.0.0.1:7400".utf8),
            "address-v6": Array("[2001:db8::1]:443".utf8),
            "address-localhost": Array("localhost:7400".utf8),
            "base32": Array("mzxw6ytboi".utf8),
            "hex": Array("00017f80abff".utf8),
        ]
    }

    /// One signed event of every kind (whole-event inputs), and kind ‖ body
    /// inputs that FuzzEvent frames and signs itself.
    static func eventSeeds() throws -> [String: [UInt8]] {
        let random = SeededRandom(seed: 110)
        let author = try Identity(seed: random.bytes(32))
        let target = try Identity(seed: random.bytes(32)).nodeID
        let room = RoomID.random(random)
        let bodies: [String: EventBody] = [
            "chat": .chat(text: "hello, room 你好"),
            "danmaku": .danmaku(text: "666", color: 0xFF_8800, lane: 3),
            "like": .like(total: 12),
            "join": .join(instance: 0x0102_0304_0506_0708, role: .host),
            "leave": .leave(reason: 2),
            "profile": .profile(Profile(nickname: "小明", avatar: "https://example.com/a.png", gender: 2, location: "Berlin")),
            "room-info": .roomInfo(RoomInfo(title: "Evening set", cover: "ipfs:bafy", location: "東京", startedAt: 1_699_999_000_000)),
            "kick": .kick(target: target),
            "mute": .mute(target: target, muted: true),
            "room-closed": .roomClosed,
            "stage": .stage(target: target, onStage: false, reason: 3),
            "relay": .relay(RelayPosition(parent: target, depth: 2, slots: 4, children: 1, addresses: [
                PeerAddress(host: .v4(0x7F00_0001), port: 7401), PeerAddress(host: .v6([0xFD] + Array(repeating: 0, count: 14) + [1]), port: 7401)])),
        ]
        var seeds: [String: [UInt8]] = [:]
        for (name, body) in bodies {
            let event = try RoomEvent.make(room: room, author: author, seq: 3, timestamp: 1_700_000_000_000, body: body)
            seeds["event-" + name] = event.encoded
            // The body alone: everything between the header (68 bytes) and the signature (64).
            seeds["body-" + name] = [body.kind.rawValue] + event.encoded.dropFirst(68).dropLast(64)
        }
        return seeds
    }

    /// One gossip message of every type, naming the fixed identities FuzzGossip
    /// sets up (node seed 0x40, peers 0x41…0x44, re-signer 0x45, room 0x47 × 16)
    /// so GRAFTs and digests ask for events its node holds; events are by 0x46.
    static func gossipSeeds() throws -> [String: [UInt8]] {
        func identity(_ n: UInt8) throws -> Identity { try Identity(seed: [UInt8](repeating: n, count: 32)) }
        let node = try identity(0x40).nodeID
        let peer = try identity(0x42).nodeID
        let author = try identity(0x46)
        let room = try RoomID(bytes: [UInt8](repeating: 0x47, count: 16))
        let v4 = PeerRecord(id: peer, address: .ipv4(10, 0, 0, 9, port: 7400))
        let v6 = PeerRecord(id: try identity(0x48).nodeID, address: try PeerAddress(parsing: "[2001:db8::7]:443"))
        func event(_ seq: UInt64, _ body: EventBody, in room: RoomID = room) throws -> [UInt8] {
            try RoomEvent.make(room: room, author: author, seq: seq, timestamp: 1_700_000_000_000 + seq, body: body).encoded
        }
        // DIGEST: after ‖ through ‖ n ‖ n × (author ‖ minSeq ‖ maxSeq ‖ m ‖ m × seq); DigestEntry has no public init.
        var digest = ByteWriter()
        digest.write(UInt8(1))
        digest.write(UInt8(12))
        digest.write(bytes: [UInt8](repeating: 0, count: 32))
        digest.write(bytes: [UInt8](repeating: 0xFF, count: 32))
        digest.write(UInt8(1))
        digest.write(bytes: node.publicKey)
        digest.write(UInt64(1))
        digest.write(UInt64(3))
        digest.write(UInt8(1))
        digest.write(UInt64(2))
        let messages: [String: GossipMessage] = [
            "join": .join,
            "forward-join-v4": .forwardJoin(ttl: 2, peer: v4),
            "forward-join-v6": .forwardJoin(ttl: 0, peer: v6),
            "neighbor-high": .neighbor(high: true),
            "neighbor-low": .neighbor(high: false),
            "neighbor-reply-yes": .neighborReply(accepted: true),
            "neighbor-reply-no": .neighborReply(accepted: false),
            "disconnect": .disconnect,
            "shuffle": .shuffle([v4, v6]),
            "shuffle-reply": .shuffleReply([v6]),
            "event-chat": .event(try event(1, .chat(text: "hello gossip"))[...]),
            "event-chat-later": .event(try event(40, .chat(text: "after a gap"))[...]),
            "event-like": .event(try event(2, .like(total: 5))[...]),
            "event-other-room": .event(try event(3, .chat(text: "wrong room"), in: RoomID(bytes: [UInt8](repeating: 1, count: 16)))[...]),
            "ihave": .ihave([EventID(author: author.nodeID, seq: 7), EventID(author: node, seq: 9)]),
            "graft": .graft([EventID(author: node, seq: 1), EventID(author: node, seq: 3)]),
            "prune": .prune,
            "digest-empty": .digest(after: [UInt8](repeating: 0, count: 32), through: [UInt8](repeating: 0xFF, count: 32), entries: []),
        ]
        var seeds = messages.mapValues(\.bytes)
        seeds["digest"] = digest.bytes
        return seeds
    }

    /// Inputs for each delivery mode, and genuine datagrams sealed under the
    /// fuzz world's own session (its seeds are fixed, so the keys match).
    static func receiveSeeds() throws -> [String: [UInt8]] {
        guard let world = World() else { throw SetupFailed(description: "the fuzz world's session did not come up") }
        var sealed: [[UInt8]] = []
        let original = world.coreEndpoint.onReceive
        world.coreEndpoint.onReceive = { d, from in
            sealed.append(d)
            original?(d, from)
        }
        try withExtendedLifetime(world) {
            try world.peer.send(Array("like".utf8), channel: .gossip, to: world.core.nodeID)
            try world.peer.send(ControlMessage.ping(7).bytes, channel: .control, to: world.core.nodeID)
            world.settle()
        }
        guard sealed.count >= 2 else { throw SetupFailed(description: "no sealed datagrams were captured") }

        let xxNet = VirtualNetwork(seed: 108)
        let xx = xxNet.makeNodes(1, seed: 109)
        let xxCapture = Capture(xx)
        let probe = xxNet.makeEndpoint()
        probe.onReceive = { d, _ in xxCapture.datagrams.append(d) }
        withExtendedLifetime((xx, xxCapture)) {
            xx[0].core.connect(to: probe.address, expecting: nil)   // its XX initiation lands on the probe
            xxNet.run(for: .milliseconds(10))
        }
        guard let xxInitiation = xxCapture.first(.xxInitiation) else {
            throw SetupFailed(description: "no XX initiation was captured")
        }

        let body16 = [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xA5, count: 16)
        func mode(_ m: DeliveryMode, _ rest: [UInt8]) -> [UInt8] { [m.selector] + rest }
        return [
            "raw-sealed-gossip": sealed[0],
            "raw-sealed-ping": sealed[1],
            "raw-xx-initiation": xxInitiation,
            "raw-garbage": Array("not a packet".utf8),
            "live-header-attacker": mode(.liveHeaderFromAttacker, [0, 0, 0, 0, 0, 0, 0] + body16),
            "live-header-peer": mode(.liveHeaderFromPeer, [0, 0, 0, 0, 0, 0, 0] + body16),
            "sealed-control-ping": mode(.sealedByPeer, [DataChannel.control.rawValue] + ControlMessage.ping(9).bytes),
            "sealed-control-hello": mode(.sealedByPeer, [DataChannel.control.rawValue]
                + ControlMessage.hello(Hello(agent: "fuzz", role: .viewer)).bytes),
            "sealed-gossip": mode(.sealedByPeer, [DataChannel.gossip.rawValue] + Array("chat".utf8)),
            "sealed-rtp": mode(.sealedByPeer, [DataChannel.rtp.rawValue, 0x80, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]),
            "handshake-ik": mode(.handshake(.ikInitiation), [UInt8](repeating: 0x11, count: 36)),
            "handshake-xx": mode(.handshake(.xxInitiation), [1, 0, 0, 0] + [UInt8](repeating: 0x22, count: 32)),
            "handshake-xx-final": mode(.handshake(.xxFinal), [0, 0, 0, 0] + [UInt8](repeating: 0x33, count: 48)),
        ]
    }

    /// RTP packets (VP8 and Opus), RTCP packets of every type, and a small VP8
    /// keyframe (decoder input), all built with the LVBMedia APIs.
    static func mediaSeeds() throws -> [String: [UInt8]] {
        let encoder = try VP8Encoder(width: 16, height: 16, fps: 30, bitrateKbps: 100, keyframeInterval: 30)
        let picture = try SyntheticVideo(width: 16, height: 16).frame(number: 1)
        guard let keyframe = try encoder.encode(picture, pts: 0, forceKeyframe: true).first?.data else {
            throw SetupFailed(description: "VP8 encoder produced no keyframe")
        }
        var packetizer = try VP8Packetizer(maxPayloadSize: max(8, keyframe.count / 2 + 4), firstPictureID: 0x1234)
        let payloads = try packetizer.packetize(keyframe)
        func rtp(_ payload: [UInt8], seq: UInt16, marker: Bool, pt: UInt8 = 96, ts: UInt32 = 90_000,
                 csrcs: [UInt32] = [], padding: UInt8 = 0) throws -> [UInt8] {
            var p = try RTPPacket(marker: marker, payloadType: pt, sequenceNumber: seq, timestamp: ts,
                                  ssrc: 0x1122_3344, csrcs: csrcs, payload: payload[...], paddingLength: padding)
            p.setCaptureTime(0x0102_0304_0506_0708)
            return p.serialized()
        }
        var seeds: [String: [UInt8]] = [
            "vp8-keyframe": keyframe,
            "vp8-descriptor-full": VP8PayloadDescriptor(nonReference: true, startOfPartition: true, partitionIndex: 1,
                                                        pictureID: .short(5), tl0PicIndex: 9,
                                                        temporalLayer: (1, true), keyIndex: 3).serialized() + [0x9D],
            "rtp-opus": try rtp([0x78, 0x01, 0x02], seq: 7, marker: false, pt: 111, ts: 960,
                                csrcs: [0xAABB_CCDD], padding: 4),
            "rtcp-sr": RTCPPacket.senderReport(try RTCPSenderReport(
                ssrc: 1, ntpTimestamp: 0x1122_3344_5566_7788, rtpTimestamp: 90_000, packetCount: 10, octetCount: 1000,
                reportBlocks: [RTCPReportBlock(ssrc: 2, fractionLost: 3, cumulativeLost: -4, extendedHighestSequence: 5,
                                               jitter: 6, lastSenderReport: 7, delaySinceLastSenderReport: 8)])).serialized(),
            "rtcp-compound": RTCPPacket.serializeCompound([
                .receiverReport(try RTCPReceiverReport(ssrc: 1)),
                .nack(try RTCPGenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [10, 12, 40])),
                .pli(RTCPPictureLossIndication(senderSSRC: 1, mediaSSRC: 2)),
            ]),
            "rtcp-keyframes-only": RTCPPacket.serializeCompound([
                .receiverReport(try RTCPReceiverReport(ssrc: 1)), .app(RTCPApp.keyframesOnly(ssrc: 1)),
            ]),
        ]
        for (i, payload) in payloads.enumerated() {
            seeds["rtp-vp8-\(i)"] = try rtp(payload, seq: 100 + UInt16(i), marker: i == payloads.count - 1)
        }
        return seeds
    }
}

extension MakeCorpus {
    /// Scripts for FuzzMediaReceive: records of [step ms | 0x80 for RTCP][length][bytes]:
    /// a short VP8 + Opus stream with a loss, a NACK and a PLI from the viewer side.
    static func mediaReceiveSeeds() throws -> [String: [UInt8]] {
        let encoder = try VP8Encoder(width: 32, height: 32, fps: 30, bitrateKbps: 100, keyframeInterval: 30)
        let pattern = try SyntheticVideo(width: 32, height: 32)
        var packetizer = try VP8Packetizer(maxPayloadSize: 40, firstPictureID: 7)
        let opus = try OpusEncoder(channels: 1, bitrate: 16000)
        var tone = try SyntheticAudio()
        func record(_ step: UInt8, rtcp: Bool, _ body: [UInt8]) -> [UInt8] {
            [step | (rtcp ? 0x80 : 0), UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
        }
        var script: [UInt8] = [], lossy: [UInt8] = []
        var seq: UInt16 = 65530
        for n in 0..<4 {
            guard let frame = try encoder.encode(pattern.frame(number: n), pts: Int64(n)).first else { continue }
            let payloads = try packetizer.packetize(frame.data)
            for (i, payload) in payloads.enumerated() {
                var p = try RTPPacket(marker: i == payloads.count - 1, payloadType: 96, sequenceNumber: seq,
                                      timestamp: UInt32(n) * 3000, ssrc: 0x1122_3344, payload: payload[...])
                p.setCaptureTime(0x0102_0304_0506_0708 &+ UInt64(n))
                script += record(i == 0 ? 33 : 0, rtcp: false, p.serialized())
                if seq % 5 != 0 { lossy += record(i == 0 ? 33 : 1, rtcp: false, p.serialized()) }
                seq &+= 1
            }
            let a = try RTPPacket(payloadType: 111, sequenceNumber: UInt16(n), timestamp: UInt32(n) * 960,
                                  ssrc: 0x5566_7788, payload: try opus.encode(tone.next20ms())[...])
            script += record(20, rtcp: false, a.serialized())
        }
        let feedback = RTCPPacket.serializeCompound([
            .receiverReport(try RTCPReceiverReport(ssrc: 9, reportBlocks: [RTCPReportBlock(
                ssrc: 0x1122_3344, fractionLost: 30, cumulativeLost: 2, extendedHighestSequence: 70000,
                jitter: 90, lastSenderReport: 0, delaySinceLastSenderReport: 0)])),
            .nack(try RTCPGenericNACK(senderSSRC: 9, mediaSSRC: 0x1122_3344, lost: [1, 2, 5])),
            .pli(RTCPPictureLossIndication(senderSSRC: 9, mediaSSRC: 0x1122_3344)),
        ])
        return ["stream": script, "stream-lossy": lossy + record(100, rtcp: true, feedback) + record(127, rtcp: false, [])]
    }
}

/// The fuzz build (`-sanitize=fuzzer`) links libFuzzer into every executable
/// of this package, and libFuzzer's `main` object needs this symbol even though
/// SwiftPM points `main` at `MakeCorpus_main`. Never called.
@_cdecl("LLVMFuzzerTestOneInput")
public func unusedFuzzTarget(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt { 0 }
