import LVBCore
import LVBCrypto
import LVBGossip
import LVBTestSupport
import Testing
@testable import LVBRendezvous

private func identity(_ n: UInt8) -> Identity {
    (try? Identity(seed: [UInt8](repeating: n, count: 32)))!  // invariant: any 32-byte seed is a key
}

private func room(_ n: UInt8) -> RoomID { (try? RoomID(bytes: [UInt8](repeating: n, count: 16)))! }  // invariant: 16 bytes

/// A JPEG-looking blob of `count` bytes (the SOI marker, then filler).
private func jpeg(_ count: Int, fill: UInt8 = 0x5A) -> [UInt8] { [0xFF, 0xD8] + [UInt8](repeating: fill, count: count - 4) + [0xFF, 0xD9] }

/// The room list's thumbnails: signed by the host, cut into pieces that fit
/// a session payload, put back together within bounds, kept by the
/// rendezvous for listed rooms only.
@Suite("Room thumbnails")
struct ThumbnailTests {
    @Test func thumbnailMessagesRoundTripAndBrokenOnesAreMalformed() throws {
        let piece = ThumbnailPiece(index: 2, count: 5, bytes: [1, 2, 3])
        let messages: [RendezvousMessage] = [
            .thumbnail(room: room(1), seq: 99, piece: piece),
            .thumbnailRequest(request: 7, room: room(1), have: 0),
            .thumbnailAnswer(request: 7, room: room(1), seq: 99, piece: piece),
            .thumbnailAnswer(request: 7, room: room(1), seq: 0, piece: nil),
        ]
        for m in messages { #expect(try RendezvousMessage.parse(m.encoded[...]) == m, "\(m)") }
        // The layout of type 11: room id, seq, part = index << 4 | count, then the piece.
        #expect(messages[0].encoded == [11] + room(1).bytes + [0, 0, 0, 0, 0, 0, 0, 99] + [0x25, 1, 2, 3])
        let good = messages[0].encoded
        for cut in [1, 17, 25, 26] { #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse(good.prefix(cut)) } }
        // Index not below count, count 0 with bytes, an empty piece, "none" with bytes after it.
        for part: UInt8 in [0x55, 0x00, 0x60] {
            var bad = good
            bad[25] = part
            #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse(bad[...]) }
        }
        #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse(good.prefix(26)) }
        var none = messages[3].encoded
        none.append(1)
        #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse(none[...]) }
        #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse(messages[1].encoded.dropLast()) }
    }

    @Test func aSignedThumbnailIsCutIntoPiecesThatFitAndPutBackTogether() throws {
        let host = identity(1)
        let t = try RoomThumbnail(room: room(1), seq: 5, jpeg: jpeg(RendezvousConstants.maxThumbnailBytes), signedBy: host)
        #expect(t.verify(host: host.nodeID))
        let pieces = try #require(t.pieces(maxPiece: 1100))
        #expect(pieces.count == 8 && pieces.allSatisfy { $0.bytes.count <= 1100 && $0.count == 8 })
        // In any order, with duplicates: the same thumbnail.
        var assembly = ThumbnailAssembly(room: room(1), seq: 5, count: 8)
        var done: RoomThumbnail?
        for p in pieces.reversed() + [pieces[3]] { done = try assembly.add(p) ?? done }
        #expect(done == t)
        // A piece that repeats one with other bytes, or claims another count, breaks the assembly.
        var other = ThumbnailAssembly(room: room(1), seq: 5, count: 8)
        _ = try other.add(pieces[0])
        #expect(throws: ThumbnailError.inconsistent) { try other.add(ThumbnailPiece(index: 0, count: 8, bytes: [1])) }
        #expect(throws: ThumbnailError.inconsistent) { try other.add(ThumbnailPiece(index: 1, count: 9, bytes: [1])) }
        // Too many pieces needed; too big; not a JPEG.
        #expect(t.pieces(maxPiece: 100) == nil)
        #expect(throws: ThumbnailError.badLength(RendezvousConstants.maxThumbnailBytes + 1)) {
            try RoomThumbnail(room: room(1), seq: 1, jpeg: jpeg(RendezvousConstants.maxThumbnailBytes + 1), signedBy: host)
        }
        #expect(throws: ThumbnailError.notJPEG) { try RoomThumbnail(room: room(1), seq: 1, jpeg: [0, 1, 2, 3, 4], signedBy: host) }
        // Pieces adding up to more than the largest blob are refused before they are all in.
        var flood = ThumbnailAssembly(room: room(1), seq: 6, count: 15)
        let big = [UInt8](repeating: 1, count: 1200)
        #expect(throws: ThumbnailError.self) { for i in 0..<15 { _ = try flood.add(ThumbnailPiece(index: UInt8(i), count: 15, bytes: big)) } }
    }

    @Test func aThumbnailSignedByAnotherKeyOrChangedDoesNotVerify() throws {
        let host = identity(1), other = identity(2)
        let t = try RoomThumbnail(room: room(1), seq: 5, jpeg: jpeg(500), signedBy: host)
        #expect(!t.verify(host: other.nodeID))
        var blob = t.blob
        blob[100] ^= 1
        #expect(!(try RoomThumbnail(room: room(1), seq: 5, blob: blob)).verify(host: host.nodeID))
        // Another room or seq under the same signature (domain and fields are signed).
        #expect(!(try RoomThumbnail(room: room(2), seq: 5, blob: t.blob)).verify(host: host.nodeID))
        #expect(!(try RoomThumbnail(room: room(1), seq: 6, blob: t.blob)).verify(host: host.nodeID))
    }

    @Test func theRendezvousKeepsTheLatestFromTheRoomsHostOnlyAndForgetsItWithTheRoom() throws {
        let clock = ManualClock()
        let registry = RoomRegistry(clock: clock)
        let host = identity(1)
        let wall = clock.wallTime()
        var a = RoomAnnouncement(room: room(1), host: host.nodeID, seq: 1, time: wall.milliseconds)
        try a.sign(with: host)
        #expect(registry.apply(a) == .listed)
        let store = ThumbnailStore()
        func send(_ t: RoomThumbnail, from sender: NodeID) throws -> RoomThumbnail? {
            var done: RoomThumbnail?
            for p in t.pieces(maxPiece: 1000) ?? [] { done = try store.take(p, room: t.room, seq: t.seq, from: sender, listing: registry.listing(t.room)) }
            return done
        }
        let first = try RoomThumbnail(room: room(1), seq: 10, jpeg: jpeg(3000), signedBy: host)
        // Another node's session, even with the host's own signed bytes: refused.
        #expect(throws: ThumbnailError.notTheHost) { try send(first, from: identity(2).nodeID) }
        // A room not listed: refused.
        let unlisted = try RoomThumbnail(room: room(3), seq: 1, jpeg: jpeg(100), signedBy: host)
        #expect(throws: ThumbnailError.notTheHost) { try send(unlisted, from: host.nodeID) }
        // Signed by another key but sent over the host's session: refused.
        let forged = try RoomThumbnail(room: room(1), seq: 11, jpeg: jpeg(100), signedBy: identity(2))
        #expect(throws: ThumbnailError.badSignature) { try send(forged, from: host.nodeID) }
        #expect(store.count == 0)

        #expect(try send(first, from: host.nodeID) == first)
        #expect(store.thumbnail(room(1)) == first)
        // A replay of it, or an older one: refused, the kept one stays.
        #expect(throws: ThumbnailError.replayed) { try send(first, from: host.nodeID) }
        let newer = try RoomThumbnail(room: room(1), seq: 12, jpeg: jpeg(200, fill: 7), signedBy: host)
        #expect(try send(newer, from: host.nodeID) == newer)
        #expect(store.thumbnail(room(1)) == newer && store.count == 1)

        // The room lapses: its thumbnail goes with it.
        clock.advance(by: RendezvousConstants.announceTTL)
        registry.expire(now: clock.now())
        store.forget { registry.listing($0) != nil }
        #expect(store.thumbnail(room(1)) == nil && store.count == 0)
    }

    /// A replay's thumbnail is its live's, signed by the host: whoever hands
    /// it on (a holder), it is taken only with the host's signature.
    @Test func aReplaysThumbnailIsTakenFromAnyoneWithTheHostsSignatureOnly() throws {
        let host = identity(1)
        let store = ThumbnailStore()
        func send(_ t: RoomThumbnail, signer: NodeID?) throws -> RoomThumbnail? {
            var done: RoomThumbnail?
            for p in t.pieces(maxPiece: 1000) ?? [] { done = try store.take(p, room: t.room, seq: t.seq, signedBy: signer) }
            return done
        }
        let kept = try RoomThumbnail(room: room(4), seq: 20, jpeg: jpeg(2500), signedBy: host)
        // No replay of the room listed: nobody's signature will do.
        #expect(throws: ThumbnailError.notTheHost) { try send(kept, signer: nil) }
        // Signed by a holder instead of the replay's host: refused.
        let forged = try RoomThumbnail(room: room(4), seq: 21, jpeg: jpeg(100), signedBy: identity(2))
        #expect(throws: ThumbnailError.badSignature) { try send(forged, signer: host.nodeID) }
        #expect(try send(kept, signer: host.nodeID) == kept)
        #expect(store.thumbnail(room(4)) == kept)
        // Handed on again (another holder, or the next announcement): refused as a replay, the kept one stays.
        #expect(throws: ThumbnailError.replayed) { try send(kept, signer: host.nodeID) }
    }
}
