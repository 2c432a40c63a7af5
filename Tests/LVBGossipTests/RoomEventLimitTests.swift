import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import TestAssertions
import Testing

// The limits and text rules of room event bodies. Each rejection is checked
// twice where it can be: `make` on the value, and `parse` on the same body
// bytes framed and validly signed, so both paths raise the same error.

extension RoomEventTests {
    // MARK: limits

    @Test func chatLimits() throws {
        _ = try make(.chat(text: String(repeating: "a", count: 500)))
        _ = try make(.chat(text: String(repeating: "字", count: 166)))  // 498 bytes
        let long = String(repeating: "a", count: 501)
        expectRejected(.textTooLong(field: "chat", max: 500), .chat(text: long), wireBody: Array(long.utf8))
        expectRejected(.emptyText, .chat(text: ""), wireBody: [])
        expectRejected(.emptyText, .chat(text: " \u{3000}\u{A0} "), wireBody: Array(" \u{3000}\u{A0} ".utf8))
        _ = try make(.chat(text: " padded "))
    }

    @Test func danmakuLimits() throws {
        _ = try make(.danmaku(text: String(repeating: "b", count: 100), color: 0xFF_FFFF, lane: 15))
        let long = String(repeating: "b", count: 101)
        expectRejected(.textTooLong(field: "danmaku", max: 100), .danmaku(text: long, color: 0, lane: 0),
                       wireBody: [0, 0, 0, 0, 0] + Array(long.utf8))
        expectRejected(.badValue("danmaku lane 16 is above 15"), .danmaku(text: "x", color: 0, lane: 16),
                       wireBody: [0, 0, 0, 0, 16, 0x78])
        expectRejected(.badValue("danmaku color 16777216 is above 0xFFFFFF"), .danmaku(text: "x", color: 0x100_0000, lane: 0),
                       wireBody: [1, 0, 0, 0, 0, 0x78])
    }

    @Test func controlCharactersAreRejected() {
        for bad in ["line\nbreak", "tab\there", "nul\u{0}", "del\u{7F}", "c1\u{85}", "c1\u{9F}", "ls\u{2028}", "ps\u{2029}", "\u{1B}[31m"] {
            expectRejected(.controlCharacters, .chat(text: bad), wireBody: Array(bad.utf8))
        }
        expectRejected(.controlCharacters, .profile(Profile(nickname: "a\rb")), wireBody: [1, 3, 0x61, 0x0D, 0x62])
        expectRejected(.controlCharacters, .profile(Profile(avatar: "a\u{7F}")), wireBody: [2, 2, 0x61, 0x7F])
    }

    @Test func invalidUTF8IsRejected() {
        let cases: [[UInt8]] = [
            [0xFF], [0x61, 0x80], [0xC3], [0xC0, 0xAF],        // stray continuation, cut sequence, overlong "/"
            [0xED, 0xA0, 0x80],                                  // UTF-16 surrogate
            [0xF4, 0x90, 0x80, 0x80],                            // past U+10FFFF
            [0xE0, 0x80, 0xAF],                                  // overlong
        ]
        for bytes in cases {
            let chat = signedWire(kind: 1, body: bytes)
            expectError(.invalidUTF8) { () throws(EventError) in try RoomEvent.parse(chat[...], kinds: RoomEvents.table) }
            let nickname = signedWire(kind: 6, body: [1, UInt8(bytes.count)] + bytes)
            expectError(.invalidUTF8) { () throws(EventError) in try RoomEvent.parse(nickname[...], kinds: RoomEvents.table) }
        }
    }

    @Test func numberRules() {
        expectRejected(.badValue("join role 2 is not a room member's (0 viewer, 1 host)"), .join(instance: 1, role: .rendezvous),
                       wireBody: [0, 0, 0, 0, 0, 0, 0, 1, 2])
        expectRejected(.badValue("leave reason 4 is unknown"), .leave(reason: 4), wireBody: [4])
        expectRejected(.badValue("gender 4 is unknown"), .profile(Profile(gender: 4)), wireBody: [3, 1, 4])
        let mute = signedWire(kind: 9, body: target.publicKey + [2])
        expectError(.badValue("mute flag 2 is not 0 or 1")) { () throws(EventError) in try RoomEvent.parse(mute[...], kinds: RoomEvents.table) }
        let kick = signedWire(kind: 8, body: [UInt8](repeating: 0xFF, count: 32))
        expectError(.badValue("target is not a valid node key")) { () throws(EventError) in try RoomEvent.parse(kick[...], kinds: RoomEvents.table) }
    }

    // MARK: profile and room-info fields

    @Test func profileFieldLimits() throws {
        _ = try make(.profile(Profile(nickname: String(repeating: "n", count: 32), avatar: String(repeating: "a", count: 200),
                                      gender: 3, location: String(repeating: "l", count: 64))))
        let nick = String(repeating: "n", count: 33)
        expectRejected(.textTooLong(field: "nickname", max: 32), .profile(Profile(nickname: nick)), wireBody: [1, 33] + Array(nick.utf8))
        let loc = String(repeating: "l", count: 65)
        expectRejected(.textTooLong(field: "location", max: 64), .profile(Profile(location: loc)), wireBody: [4, 65] + Array(loc.utf8))
        let avatar = String(repeating: "a", count: 201)
        expectRejected(.textTooLong(field: "avatar", max: 200), .profile(Profile(avatar: avatar)), wireBody: [2, 201] + Array(avatar.utf8))
        expectRejected(.badValue("avatar must be printable ASCII"), .profile(Profile(avatar: "héllo")), wireBody: [2, 6] + Array("héllo".utf8))
        expectRejected(.emptyText, .profile(Profile(nickname: "")), wireBody: [1, 0])
        expectRejected(.emptyText, .profile(Profile(avatar: "   ")), wireBody: [2, 3, 0x20, 0x20, 0x20])
        let title = String(repeating: "t", count: 101)
        expectRejected(.textTooLong(field: "title", max: 100), .roomInfo(RoomInfo(title: title)), wireBody: [1, 101] + Array(title.utf8))
        expectRejected(.emptyText, .roomInfo(RoomInfo(cover: "")), wireBody: [2, 0])
    }

    @Test func tlvStructureIsCanonical() {
        func parse(_ kind: UInt8, _ body: [UInt8]) throws(EventError) -> RoomEvent {
            try RoomEvent.parse(signedWire(kind: kind, body: body)[...], kinds: RoomEvents.table)
        }
        expectError(.badValue("profile fields out of order or repeated (type 1 after 2)")) { () throws(EventError) in
            try parse(6, [2, 1, 0x61, 1, 1, 0x62])
        }
        expectError(.badValue("profile fields out of order or repeated (type 1 after 1)")) { () throws(EventError) in
            try parse(6, [1, 1, 0x61, 1, 1, 0x62])
        }
        expectError(.badValue("profile field type 5 is unknown")) { () throws(EventError) in try parse(6, [5, 1, 0x61]) }
        expectError(.badValue("profile field type 0 is unknown")) { () throws(EventError) in try parse(6, [0, 1, 0x61]) }
        expectError(.badValue("room info field type 9 is unknown")) { () throws(EventError) in try parse(7, [9, 0]) }
        expectError(.badValue("room info fields out of order or repeated (type 3 after 4)")) { () throws(EventError) in
            try parse(7, [4, 8, 0, 0, 0, 0, 0, 0, 0, 1, 3, 1, 0x61])
        }
        expectError(.emptyText) { () throws(EventError) in try parse(6, [1, 0]) }
        expectError(.badValue("gender is 1 byte")) { () throws(EventError) in try parse(6, [3, 0]) }
        expectError(.badValue("gender is 1 byte")) { () throws(EventError) in try parse(6, [3, 2, 0, 1]) }
        expectError(.badValue("startedAt is 8 bytes")) { () throws(EventError) in try parse(7, [4, 0]) }
        expectError(.truncated) { () throws(EventError) in try parse(6, [1, 5, 0x61]) }   // length past the body
        expectError(.truncated) { () throws(EventError) in try parse(6, [1]) }            // type without length
    }
}
