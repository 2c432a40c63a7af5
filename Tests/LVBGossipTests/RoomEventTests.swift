import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport
import TestAssertions
import Testing

// Byte vectors and malformed inputs for the signed room event format
// (RoomEvent.swift, EventBodyCodec.swift). `signedWire` below is a second,
// independent encoder written straight from the diagram: the vectors check
// `make` against it, and the malformed cases use it to build events whose
// signature is valid, so the error a test sees comes from the body rule it breaks.

@Suite struct RoomEventTests {
    // Fixed inputs that cannot fail: any 32-byte seed is an identity, and 16 bytes a room id.
    let author = (try? Identity(seed: [UInt8](repeating: 7, count: 32)))!
    let other = (try? Identity(seed: [UInt8](repeating: 9, count: 32)))!
    let room = (try? RoomID(bytes: [UInt8](repeating: 0xAB, count: 16)))!
    let seq: UInt64 = 42
    let timestamp: UInt64 = 1_700_000_000_000  // 0x0000018bcfe56800
    var target: NodeID { other.nodeID }

    /// version ‖ room ‖ author ‖ seq ‖ timestamp ‖ kind ‖ bodyLength ‖ body ‖ signature, signed
    /// by `signer` (default: the author) over the context, a zero byte and all before the signature.
    func signedWire(kind: UInt8, body: [UInt8], room: RoomID? = nil, signer: Identity? = nil) -> [UInt8] {
        var w = ByteWriter()
        w.write(UInt8(1))
        w.write(bytes: (room ?? self.room).bytes)
        w.write(bytes: author.nodeID.publicKey)
        w.write(seq)
        w.write(timestamp)
        w.write(kind)
        w.write(UInt16(body.count))
        w.write(bytes: body)
        let signature = (signer ?? self.author).sign(Array("lvbnode room event v1".utf8) + [0] + w.bytes)
        return w.bytes + signature
    }

    func make(_ body: EventBody, room: RoomID? = nil) throws(EventError) -> RoomEvent {
        try RoomEvent.make(room: room ?? self.room, author: author, seq: seq, timestamp: timestamp, body: body)
    }

    /// Expects the same error from `make` on `body` and from `parse` on its bytes, validly signed.
    func expectRejected(_ expected: EventError, _ body: EventBody, wireBody: [UInt8],
                        sourceLocation: SourceLocation = #_sourceLocation) {
        expectError(expected, { () throws(EventError) in try make(body) }, sourceLocation: sourceLocation)
        let wire = signedWire(kind: body.kind.rawValue, body: wireBody)
        expectError(expected, { () throws(EventError) in try RoomEvent.parse(wire[...], kinds: RoomEvents.table) }, sourceLocation: sourceLocation)
    }

    var everyKind: [EventBody] {
        [
            .chat(text: "hello, room"),
            .danmaku(text: "666 弹幕", color: 0xFF_8800, lane: 3),
            .like(total: 3),
            .join(instance: 0x0102_0304_0506_0708, role: .viewer),
            .leave(reason: 2),
            .profile(Profile(nickname: "小明", avatar: "https://example.com/a.png", gender: 2, location: "Berlin")),
            .profile(Profile()),
            .roomInfo(RoomInfo(title: "Evening set", cover: "ipfs:bafy", location: "東京", startedAt: 1_699_999_000_000)),
            .roomInfo(RoomInfo(startedAt: 5)),
            .kick(target: target),
            .mute(target: target, muted: true),
            .mute(target: target, muted: false),
            .roomClosed,
            .stage(target: target, onStage: true, reason: 0),
            .stage(target: target, onStage: false, reason: 3),
            .relay(RelayPosition(parent: nil, depth: 0, slots: 4, children: 2, addresses: [PeerAddress(host: .v4(0x7F00_0001), port: 7400)])),
            .relay(RelayPosition(parent: target, depth: 3, slots: 16, children: 16, addresses: [
                PeerAddress(host: .v4(0x0A00_0002), port: 1), PeerAddress(host: .v6(Array(repeating: 0xAB, count: 16)), port: 65535),
                PeerAddress(host: .v4(1), port: 2), PeerAddress(host: .v4(3), port: 4)])),
            .relay(RelayPosition(parent: target, depth: 64, slots: 0, children: 0, addresses: [])),
        ]
    }

    // MARK: byte vectors

    @Test func chatVector() throws {
        let e = try make(.chat(text: "hello, room"))
        #expect(e.encoded == signedWire(kind: 1, body: Array("hello, room".utf8)))
        #expect(Hex.encode(e.encoded) == chatHex)
        #expect(e.encoded.count == 68 + 11 + 64)
    }

    @Test func likeVector() throws {
        let e = try make(.like(total: 3))
        #expect(e.encoded == signedWire(kind: 3, body: [0, 0, 0, 0, 0, 0, 0, 3]))
        #expect(Hex.encode(e.encoded) == likeHex)
    }

    @Test func joinVector() throws {
        let e = try make(.join(instance: 0x0102_0304_0506_0708, role: .viewer))
        #expect(e.encoded == signedWire(kind: 4, body: [1, 2, 3, 4, 5, 6, 7, 8, 0]))
        #expect(Hex.encode(e.encoded) == joinHex)
    }

    @Test func kickVector() throws {
        let e = try make(.kick(target: target))
        #expect(e.encoded == signedWire(kind: 8, body: target.publicKey))
        #expect(Hex.encode(e.encoded) == kickHex)
    }

    @Test func bodyLayouts() throws {
        let danmaku = try make(.danmaku(text: "hi", color: 0x12_3456, lane: 15))
        #expect(danmaku.encoded == signedWire(kind: 2, body: [0, 0x12, 0x34, 0x56, 15, 0x68, 0x69]))
        let leave = try make(.leave(reason: 3))
        #expect(leave.encoded == signedWire(kind: 5, body: [3]))
        let profile = try make(.profile(Profile(nickname: "a", avatar: "b", gender: 1, location: "c")))
        #expect(profile.encoded == signedWire(kind: 6, body: [1, 1, 0x61, 2, 1, 0x62, 3, 1, 1, 4, 1, 0x63]))
        let gender = try make(.profile(Profile(gender: 0)))
        #expect(gender.encoded == signedWire(kind: 6, body: [3, 1, 0]))
        let info = try make(.roomInfo(RoomInfo(title: "t", cover: "c", location: "l", startedAt: 0x0102)))
        #expect(info.encoded == signedWire(kind: 7, body: [1, 1, 0x74, 2, 1, 0x63, 3, 1, 0x6C, 4, 8, 0, 0, 0, 0, 0, 0, 1, 2]))
        let mute = try make(.mute(target: target, muted: true))
        #expect(mute.encoded == signedWire(kind: 9, body: target.publicKey + [1]))
        let closed = try make(.roomClosed)
        #expect(closed.encoded == signedWire(kind: 10, body: []))
        let stage = try make(.stage(target: target, onStage: false, reason: 4))
        #expect(stage.encoded == signedWire(kind: 11, body: target.publicKey + [0, 4]))
        // On stage carries no reason; off stage needs one of 1...4; the flag is 0 or 1.
        for bad in [[1, 1], [0, 0], [0, 5], [2, 0]] as [[UInt8]] {
            let wire = signedWire(kind: 11, body: target.publicKey + bad)
            expectError("stage \(bad)", { (e: EventError) in if case .badValue = e { true } else { false } }) { () throws(EventError) in
                try RoomEvent.parse(wire[...], kinds: RoomEvents.table)
            }
        }
        let empty = try make(.profile(Profile()))
        #expect(empty.encoded == signedWire(kind: 6, body: []))
    }

    @Test func relayPositionLayoutAndLimits() throws {
        let loopback = PeerAddress(host: .v4(0x7F00_0001), port: 0x1CE8)
        let child = try make(.relay(RelayPosition(parent: target, depth: 2, slots: 4, children: 1, addresses: [loopback])))
        #expect(child.encoded == signedWire(kind: 12, body: [1] + target.publicKey + [2, 4, 1, 1, 4, 127, 0, 0, 1, 0x1C, 0xE8]))
        let root = try make(.relay(RelayPosition(parent: nil, depth: 0, slots: 0, children: 0, addresses: [])))
        #expect(root.encoded == signedWire(kind: 12, body: [0, 0, 0, 0, 0]))
        func badValue(_ e: EventError) -> Bool { if case .badValue = e { true } else { false } }
        let a = [loopback]
        for bad in [RelayPosition(parent: nil, depth: 1, slots: 4, children: 0, addresses: a),    // no parent below the root
                    RelayPosition(parent: target, depth: 0, slots: 4, children: 0, addresses: a), // a parent at the root
                    RelayPosition(parent: target, depth: 65, slots: 4, children: 0, addresses: a),
                    RelayPosition(parent: target, depth: 1, slots: 17, children: 0, addresses: a),
                    RelayPosition(parent: target, depth: 1, slots: 2, children: 3, addresses: a),
                    RelayPosition(parent: target, depth: 1, slots: 2, children: 0, addresses: Array(repeating: loopback, count: 5))] {
            expectError("\(bad)", badValue) { () throws(EventError) in try make(.relay(bad)) }
        }
        // The flags byte: bit 0 a parent, bits 1-2 the author's NAT (3: hard).
        let hard = try make(.relay(RelayPosition(parent: target, depth: 2, slots: 4, children: 1, addresses: [loopback], nat: .hard)))
        #expect(hard.encoded == signedWire(kind: 12, body: [7] + target.publicKey + [2, 4, 1, 1, 4, 127, 0, 0, 1, 0x1C, 0xE8]))
        // On the wire: another flag bit, an unknown address family, a count above 4, a short body.
        for (body, truncated) in [([8, 0, 0, 0, 0], false), ([0, 0, 0, 0, 1, 5, 1, 2, 3, 4, 0, 0], false),
                                  ([0, 0, 0, 0, 5] + Array(repeating: 0, count: 35), false), ([1] + target.publicKey + [1, 1], true),
                                  ([0, 0, 0, 0, 1, 4, 127, 0], true)] as [([UInt8], Bool)] {
            let wire = signedWire(kind: 12, body: body)
            expectError("relay \(body.prefix(6))", { (e: EventError) in truncated ? e == .truncated : badValue(e) }) { () throws(EventError) in
                try RoomEvent.parse(wire[...], kinds: RoomEvents.table)
            }
        }
    }

    // MARK: round trips

    @Test func everyKindRoundTrips() throws {
        for body in everyKind {
            let e = try make(body)
            let parsed = try RoomEvent.parse(e.encoded[...], kinds: RoomEvents.table)
            #expect(parsed == e)
            #expect(parsed.body == body)
            #expect(parsed.encoded == e.encoded)
            #expect(parsed.id == EventID(author: author.nodeID, seq: seq))
            #expect(parsed.room == room && parsed.timestamp == timestamp && parsed.signature.count == 64)
            #expect(e.encoded.count <= RoomEvent.maxEncodedSize)
        }
    }

    @Test func parsesFromASliceOfALargerBuffer() throws {
        let e = try make(.chat(text: "sliced"))
        let buffer = [0xEE, 0xEE] + e.encoded + [0xEE]
        let parsed = try RoomEvent.parse(buffer[2..<(2 + e.encoded.count)], kinds: RoomEvents.table)
        #expect(parsed == e)
    }

    @Test func maxEncodedSizeIsALongestChat() throws {
        #expect(RoomEvent.maxEncodedSize == 632)
        let longest = try make(.chat(text: String(repeating: "x", count: 500)))
        #expect(longest.encoded.count == RoomEvent.maxEncodedSize)
        let info = try make(.roomInfo(RoomInfo(title: String(repeating: "t", count: 100), cover: String(repeating: "c", count: 200),
                                               location: String(repeating: "l", count: 64), startedAt: .max)))
        #expect(info.encoded.count < RoomEvent.maxEncodedSize)
    }

    // MARK: tampering

    @Test func everyBitFlipIsRejected() throws {
        let encoded = try make(.chat(text: "hello, room")).encoded
        for i in encoded.indices {
            for bit in 0..<8 {
                var flipped = encoded
                flipped[i] ^= 1 << bit
                do {
                    let e = try RoomEvent.parse(flipped[...], kinds: RoomEvents.table)
                    Issue.record("flip of byte \(i) bit \(bit) accepted: \(e)")
                } catch {
                    // Where the flip lands decides the error; in the signature it can only be that.
                    if i >= encoded.count - 64 { #expect(error == .badSignature) }
                }
            }
        }
    }

    @Test func everyTruncationIsRejected() throws {
        for body in everyKind {
            let encoded = try make(body).encoded
            for n in 0..<encoded.count {
                #expect(throws: EventError.self) { try RoomEvent.parse(encoded[..<n], kinds: RoomEvents.table) }
            }
        }
        expectError(.truncated) { () throws(EventError) in try RoomEvent.parse([][...], kinds: RoomEvents.table) }
    }

    @Test func trailingBytesAreRejected() throws {
        let encoded = try make(.like(total: 1)).encoded
        expectError(.trailingBytes) { () throws(EventError) in try RoomEvent.parse((encoded + [0])[...], kinds: RoomEvents.table) }
        // A fixed-size body with more bytes than its kind holds, validly signed.
        let long = signedWire(kind: 3, body: [0, 0, 0, 0, 0, 0, 0, 1, 0])
        expectError(.trailingBytes) { () throws(EventError) in try RoomEvent.parse(long[...], kinds: RoomEvents.table) }
        let short = signedWire(kind: 3, body: [0, 0, 0, 1])
        expectError(.truncated) { () throws(EventError) in try RoomEvent.parse(short[...], kinds: RoomEvents.table) }
    }

    @Test func signatureByAnotherIdentityIsRejected() {
        let forged = signedWire(kind: 1, body: Array("I am the host".utf8), signer: other)
        expectError(.badSignature) { () throws(EventError) in try RoomEvent.parse(forged[...], kinds: RoomEvents.table) }
    }

    @Test func theRoomIsSigned() throws {
        let elsewhere = try RoomID(bytes: [UInt8](repeating: 0xCD, count: 16))
        let here = try make(.chat(text: "hi"))
        let there = try make(.chat(text: "hi"), room: elsewhere)
        #expect(here.signature != there.signature)
        // Moving an event into another room breaks its signature.
        var moved = here.encoded
        moved.replaceSubrange(1..<17, with: elsewhere.bytes)
        expectError(.badSignature) { () throws(EventError) in try RoomEvent.parse(moved[...], kinds: RoomEvents.table) }
    }

    @Test func headerErrors() throws {
        var wire = signedWire(kind: 1, body: Array("x".utf8))
        wire[0] = 2
        expectError(.badVersion(2)) { () throws(EventError) in try RoomEvent.parse(wire[...], kinds: RoomEvents.table) }
        let unknown = signedWire(kind: 200, body: [])
        expectError(.unknownKind(200)) { () throws(EventError) in try RoomEvent.parse(unknown[...], kinds: RoomEvents.table) }
        let zero = signedWire(kind: 0, body: [])
        expectError(.unknownKind(0)) { () throws(EventError) in try RoomEvent.parse(zero[...], kinds: RoomEvents.table) }
        // 32 bytes that are not a point on the curve.
        var badKey = signedWire(kind: 10, body: [])
        badKey.replaceSubrange(17..<49, with: [UInt8](repeating: 0xFF, count: 32))
        expectError(.badAuthor) { () throws(EventError) in try RoomEvent.parse(badKey[...], kinds: RoomEvents.table) }
    }

    // MARK: room ids

    @Test func roomIDs() throws {
        expectError(.badRoomID) { () throws(EventError) in try RoomID(bytes: [UInt8](repeating: 0, count: 15)) }
        expectError(.badRoomID) { () throws(EventError) in try RoomID(bytes: [UInt8](repeating: 0, count: 17)) }
        #expect(room.text == "vov2xk5lvov2xk5lvov2xk5lvm")
        #expect(room.description == room.text)
        let a = RoomID.random(SeededRandom(seed: 1))
        #expect(a == RoomID.random(SeededRandom(seed: 1)))
        #expect(a != RoomID.random(SeededRandom(seed: 2)))
        #expect(a.bytes.count == 16 && a.text.count == 26)
    }
}


// Pinned vectors: identity seed 7×32, room 16×0xAB, seq 42, timestamp 1_700_000_000_000.
// Laid out as the diagram in RoomEvent.swift; the same bytes come out of an
// independent encoder signing with another Ed25519 implementation (OpenSSL).
private let vectorHeader = "01"                                                          // version
    + "abababababababababababababababab"                                                  // room
    + "ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c"                  // author
    + "000000000000002a"                                                                  // seq 42
    + "0000018bcfe56800"                                                                  // timestamp

private let chatHex = vectorHeader + "01" + "000b" + "68656c6c6f2c20726f6f6d"           // "hello, room"
    + "6453aeac53556e3df0480ab6846441f3ddd7e1567b5778c0c0ef1d05686c530a"
    + "b481af4bc91d0702a3681c8c09e7b952416694171d9fec42ae451f6001513f0c"

private let likeHex = vectorHeader + "03" + "0008" + "0000000000000003"                 // total 3
    + "b9f89bd9db28e4333b3467020bfe48d2938707c410abdd2c9fba1d73f93d7589"
    + "f29d70d55756b6c4ef8fcb2c27d31452e50ca0c5c02cdbe40730e3228ece5605"

private let joinHex = vectorHeader + "04" + "0009" + "0102030405060708" + "00"          // instance, viewer
    + "dc9973ee8c43b1bd44321b2cac067bf2d635cc7e330bfc30574c1c453aeac969"
    + "d1ca5a0a658703c1c872c222e79e3d5bf42624064bf1b848f2948e95d5a94d01"

private let kickHex = vectorHeader + "08" + "0020"
    + "fd1724385aa0c75b64fb78cd602fa1d991fdebf76b13c58ed702eac835e9f618"                  // target (seed 9×32)
    + "9bba06752ca7f2304046deb05314299354c3e7e01c75e5d905795f8a538ed5e6"
    + "4b683be412b08d0aa33316f9d914b172237deee25921903f10f64cbc90a2070f"
