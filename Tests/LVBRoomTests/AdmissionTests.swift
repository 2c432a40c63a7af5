import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import TestAssertions
import Testing

/// Private rooms: password proofs bound to the session, host-signed invites
/// and membership passes, and the admission messages' byte layouts.
@Suite struct AdmissionTests {
    let clock = ManualClock()
    let host = identity(1)
    let joiner = identity(2)
    let stranger = identity(3)
    let binding = SeededRandom(seed: 1).bytes(64)
    let otherBinding = SeededRandom(seed: 2).bytes(64)
    /// A fixed room key, so most tests skip the deliberately slow Argon2id.
    let roomKey = [UInt8](repeating: 0x42, count: 32)

    func policy(_ mode: AdmissionPolicy.Mode) -> AdmissionPolicy {
        AdmissionPolicy(room: testRoom, host: host, mode: mode, clock: clock)
    }

    func admittedPass(of response: AdmissionResponse) -> MembershipPass? {
        if case let .admitted(pass) = response.result { return pass }
        return nil
    }

    func denial(of response: AdmissionResponse) -> AdmissionDenial? {
        if case let .denied(reason) = response.result { return reason }
        return nil
    }

    // MARK: Password rooms

    @Test func theRightPasswordAdmitsWithAPassTheRoomAccepts() throws {
        let gate = policy(.password(roomKey: roomKey))
        let request = AdmissionRequest.password(roomKey: roomKey, sessionBinding: binding, joiner: joiner.nodeID, room: testRoom)
        let response = gate.evaluate(request, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)
        let pass = try #require(admittedPass(of: response))
        #expect(response.room == testRoom && pass.room == testRoom && pass.member == joiner.nodeID)
        #expect(pass.issuedAt == 1_700_000_000_000)
        #expect(AdmissionPolicy.verifyPass(pass, room: testRoom, host: host.nodeID, member: joiner.nodeID))
        #expect(gate.stats.admitted == 1 && gate.stats.failedPasswords == 0 && gate.isPrivate)
    }

    @Test func aWrongPasswordOrNoProofIsDenied() {
        let gate = policy(.password(roomKey: roomKey))
        let wrongKey = [UInt8](repeating: 0x43, count: 32)
        let wrong = AdmissionRequest.password(roomKey: wrongKey, sessionBinding: binding, joiner: joiner.nodeID, room: testRoom)
        #expect(denial(of: gate.evaluate(wrong, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)) == .wrongPassword)
        let bare = AdmissionRequest(room: testRoom, proof: .none)
        #expect(denial(of: gate.evaluate(bare, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)) == .wrongPassword)
        #expect(gate.stats.failedPasswords == 1 && gate.stats.denied == 2)
    }

    @Test func aProofIsUselessOnAnotherSessionOrForAnotherNode() {
        let gate = policy(.password(roomKey: roomKey))
        let captured = AdmissionRequest.password(roomKey: roomKey, sessionBinding: binding, joiner: joiner.nodeID, room: testRoom)
        // Replayed by the same node on a new session (new handshake hash).
        #expect(denial(of: gate.evaluate(captured, from: joiner.nodeID, sessionBinding: otherBinding, kicked: false, closed: false)) == .wrongPassword)
        // Replayed by an eavesdropper (it cannot share the session, nor its id).
        #expect(denial(of: gate.evaluate(captured, from: stranger.nodeID, sessionBinding: binding, kicked: false, closed: false)) == .wrongPassword)
        #expect(gate.stats.failedPasswords == 2)
    }

    @Test func onlineGuessingGetsThreeAttemptsPerMinute() throws {
        let gate = policy(.password(roomKey: roomKey))
        for n in 0..<RoomConstants.passwordAttempts {
            let guess = AdmissionRequest.password(roomKey: [UInt8](repeating: UInt8(n), count: 32), sessionBinding: binding,
                                                  joiner: joiner.nodeID, room: testRoom)
            #expect(denial(of: gate.evaluate(guess, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)) == .wrongPassword)
        }
        let right = AdmissionRequest.password(roomKey: roomKey, sessionBinding: binding, joiner: joiner.nodeID, room: testRoom)
        #expect(denial(of: gate.evaluate(right, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)) == .wrongPassword)
        #expect(gate.stats.failedPasswords == 3 && gate.stats.throttledPasswords == 1)
        // Other peers are not held back by one peer's guessing.
        let theirs = AdmissionRequest.password(roomKey: roomKey, sessionBinding: otherBinding, joiner: stranger.nodeID, room: testRoom)
        #expect(admittedPass(of: gate.evaluate(theirs, from: stranger.nodeID, sessionBinding: otherBinding, kicked: false, closed: false)) != nil)
        clock.advance(by: .seconds(19))
        #expect(denial(of: gate.evaluate(right, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)) == .wrongPassword)
        clock.advance(by: .seconds(1))
        #expect(admittedPass(of: gate.evaluate(right, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)) != nil)
    }

    @Test func passwordKeysAreArgon2idPerRoom() throws {
        let key = try PasswordKey.derive(password: "correct horse", roomID: testRoom.bytes)
        #expect(key.count == 32)
        #expect(try PasswordKey.derive(password: Array("correct horse".utf8), roomID: testRoom.bytes) == key)
        #expect(try PasswordKey.derive(password: "correct horse", roomID: otherRoom.bytes) != key)
        #expect(try PasswordKey.derive(password: "correct hors", roomID: testRoom.bytes) != key)
        expectError(.emptyPassword) { () throws(PasswordKeyError) in try PasswordKey.derive(password: "", roomID: testRoom.bytes) }
        expectError(.badRoomID) { () throws(PasswordKeyError) in try PasswordKey.derive(password: "x", roomID: [1, 2, 3]) }
        expectError(.passwordTooLong(max: PasswordKey.maxPasswordLength)) { () throws(PasswordKeyError) in
            try PasswordKey.derive(password: String(repeating: "a", count: PasswordKey.maxPasswordLength + 1), roomID: testRoom.bytes)
        }
        // End to end: both sides derive the key from the password.
        let gate = policy(.password(roomKey: key))
        let joinerKey = try PasswordKey.derive(password: "correct horse", roomID: testRoom.bytes)
        let request = AdmissionRequest.password(roomKey: joinerKey, sessionBinding: binding, joiner: joiner.nodeID, room: testRoom)
        #expect(admittedPass(of: gate.evaluate(request, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)) != nil)
    }

    // MARK: Invites

    @Test func anInviteAdmitsItsInviteeUntilItExpires() throws {
        let gate = policy(.inviteOnly)
        let invite = gate.makeInvite(for: joiner.nodeID, validFor: .seconds(3600))
        #expect(invite.expiresAt == 1_700_000_000_000 + 3_600_000)
        let request = AdmissionRequest(room: testRoom, proof: .invite(invite))
        let response = gate.evaluate(request, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)
        #expect(try #require(admittedPass(of: response)).member == joiner.nodeID)

        // For someone else: the session's peer is not the invitee.
        #expect(denial(of: gate.evaluate(request, from: stranger.nodeID, sessionBinding: binding, kicked: false, closed: false)) == .inviteInvalid)
        // No invite at all.
        let bare = AdmissionRequest(room: testRoom, proof: .none)
        #expect(denial(of: gate.evaluate(bare, from: stranger.nodeID, sessionBinding: binding, kicked: false, closed: false)) == .inviteRequired)
        let guess = AdmissionRequest.password(roomKey: roomKey, sessionBinding: binding, joiner: stranger.nodeID, room: testRoom)
        #expect(denial(of: gate.evaluate(guess, from: stranger.nodeID, sessionBinding: binding, kicked: false, closed: false)) == .inviteRequired)
        // Expired.
        clock.advance(by: .seconds(3600))
        #expect(denial(of: gate.evaluate(request, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)) == .inviteInvalid)
    }

    @Test func forgedOrForeignInvitesAreDenied() {
        let gate = policy(.inviteOnly)
        let expires: UInt64 = 1_800_000_000_000
        let bySomeoneElse = Invite(host: stranger, room: testRoom, invitee: joiner.nodeID, expiresAt: expires)
        let forOtherRoom = Invite(host: host, room: otherRoom, invitee: joiner.nodeID, expiresAt: expires)
        let genuine = Invite(host: host, room: testRoom, invitee: joiner.nodeID, expiresAt: expires)
        let extended = Invite(room: testRoom, invitee: joiner.nodeID, expiresAt: expires + 1, signature: genuine.signature)
        // A pass is signed under another context, so it cannot pose as an invite.
        let pass = MembershipPass(host: host, room: testRoom, member: joiner.nodeID, issuedAt: expires)
        let passAsInvite = Invite(room: testRoom, invitee: joiner.nodeID, expiresAt: expires, signature: pass.signature)
        for invite in [bySomeoneElse, forOtherRoom, extended, passAsInvite] {
            let request = AdmissionRequest(room: testRoom, proof: .invite(invite))
            #expect(denial(of: gate.evaluate(request, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)) == .inviteInvalid)
        }
        // A valid invite also opens a password room.
        let passwordGate = policy(.password(roomKey: roomKey))
        let request = AdmissionRequest(room: testRoom, proof: .invite(genuine))
        #expect(admittedPass(of: passwordGate.evaluate(request, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)) != nil)
    }

    @Test func inviteTextRoundTripsAndNamesItsMistakes() throws {
        let invite = policy(.inviteOnly).makeInvite(for: joiner.nodeID, validFor: .seconds(60))
        let text = invite.text
        #expect(text.hasPrefix("lvbi") && text.count == 4 + 199)
        #expect(try Invite(text: text) == invite)
        #expect(try Invite(text: "  " + text.uppercased() + "\n") == invite)
        expectError(.notAnInvite) { () throws(RoomError) in try Invite(text: "lvb1abc") }
        expectError(.notAnInvite) { () throws(RoomError) in try Invite(text: "") }
        expectError(.damagedInvite) { () throws(RoomError) in try Invite(text: String(text.dropLast())) }
        expectError(.damagedInvite) { () throws(RoomError) in try Invite(text: text + "a") }
        expectError(.damagedInvite) { () throws(RoomError) in try Invite(text: "lvbi!!") }
        var chars = Array(text)
        chars[40] = chars[40] == "a" ? "b" : "a"
        let changed = String(chars)
        expectError(.damagedInvite) { () throws(RoomError) in try Invite(text: changed) }
    }

    // MARK: Open rooms, kicked, closed, wrong room

    @Test func openRoomsAdmitEveryoneNotKickedWhileOpen() throws {
        let gate = policy(.open)
        #expect(!gate.isPrivate)
        let request = AdmissionRequest(room: testRoom, proof: .none)
        let response = gate.evaluate(request, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)
        #expect(AdmissionPolicy.verifyPass(try #require(admittedPass(of: response)), room: testRoom, host: host.nodeID, member: joiner.nodeID))
        #expect(denial(of: gate.evaluate(request, from: joiner.nodeID, sessionBinding: binding, kicked: true, closed: false)) == .kicked)
        #expect(denial(of: gate.evaluate(request, from: joiner.nodeID, sessionBinding: binding, kicked: true, closed: true)) == .roomClosed)
        let elsewhere = AdmissionRequest(room: otherRoom, proof: .none)
        let wrong = gate.evaluate(elsewhere, from: joiner.nodeID, sessionBinding: binding, kicked: false, closed: false)
        #expect(denial(of: wrong) == .wrongRoom && wrong.room == otherRoom)
    }

    // MARK: Passes

    @Test func passesVerifyOnlyForTheirRoomMemberAndHost() {
        let genuine = MembershipPass(host: host, room: testRoom, member: joiner.nodeID, issuedAt: 5)
        #expect(AdmissionPolicy.verifyPass(genuine, room: testRoom, host: host.nodeID, member: joiner.nodeID))
        #expect(!AdmissionPolicy.verifyPass(genuine, room: otherRoom, host: host.nodeID, member: joiner.nodeID))
        #expect(!AdmissionPolicy.verifyPass(genuine, room: testRoom, host: host.nodeID, member: stranger.nodeID))
        #expect(!AdmissionPolicy.verifyPass(genuine, room: testRoom, host: stranger.nodeID, member: joiner.nodeID))
        let forged = MembershipPass(host: stranger, room: testRoom, member: joiner.nodeID, issuedAt: 5)
        #expect(!AdmissionPolicy.verifyPass(forged, room: testRoom, host: host.nodeID, member: joiner.nodeID))
        let otherRoomPass = MembershipPass(host: host, room: otherRoom, member: joiner.nodeID, issuedAt: 5)
        #expect(!AdmissionPolicy.verifyPass(otherRoomPass, room: testRoom, host: host.nodeID, member: joiner.nodeID))
        let lent = MembershipPass(room: testRoom, member: stranger.nodeID, issuedAt: 5, signature: genuine.signature)
        #expect(!AdmissionPolicy.verifyPass(lent, room: testRoom, host: host.nodeID, member: stranger.nodeID))
        let invite = Invite(host: host, room: testRoom, invitee: joiner.nodeID, expiresAt: 5)
        let inviteAsPass = MembershipPass(room: testRoom, member: joiner.nodeID, issuedAt: 5, signature: invite.signature)
        #expect(!AdmissionPolicy.verifyPass(inviteAsPass, room: testRoom, host: host.nodeID, member: joiner.nodeID))
    }

    // MARK: Bytes

    func everyMessage() -> [AdmissionMessage] {
        let invite = Invite(host: host, room: testRoom, invitee: joiner.nodeID, expiresAt: 0x0102_0304_0506_0708)
        let pass = MembershipPass(host: host, room: testRoom, member: joiner.nodeID, issuedAt: 99)
        var messages: [AdmissionMessage] = [
            .request(AdmissionRequest(room: testRoom, proof: .none)),
            .request(AdmissionRequest.password(roomKey: roomKey, sessionBinding: binding, joiner: joiner.nodeID, room: testRoom)),
            .request(AdmissionRequest(room: testRoom, proof: .invite(invite))),
            .response(AdmissionResponse(room: testRoom, result: .admitted(pass: pass))),
        ]
        for raw in UInt8(1)...6 {
            messages.append(.response(AdmissionResponse(room: testRoom, result: .denied(reason: AdmissionDenial(rawValue: raw)!))))  // invariant: 1...6 are all defined
        }
        return messages
    }

    @Test func messagesHaveExactLayouts() {
        let lengths = everyMessage().map(\.encoded.count)
        #expect(lengths == [18, 18 + 32, 18 + 120, 18 + 120] + Array(repeating: 19, count: 6))
        let bare = AdmissionMessage.request(AdmissionRequest(room: testRoom, proof: .none)).encoded
        #expect(bare == [1] + Array(1...16) + [0])
        let denied = AdmissionMessage.response(AdmissionResponse(room: testRoom, result: .denied(reason: .kicked))).encoded
        #expect(denied == [2] + Array(1...16) + [1, 4])
        let invite = Invite(host: host, room: testRoom, invitee: joiner.nodeID, expiresAt: 0x0102_0304_0506_0708)
        #expect(Array(invite.encoded[0..<16]) == testRoom.bytes)
        #expect(Array(invite.encoded[16..<48]) == joiner.nodeID.publicKey)
        #expect(Array(invite.encoded[48..<56]) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(Array(invite.encoded[56...]) == invite.signature)
    }

    @Test func messagesRoundTripAndEveryTruncationIsAnError() throws {
        for message in everyMessage() {
            let bytes = message.encoded
            #expect(try AdmissionMessage.parse(bytes[...]) == message)
            for cut in 0..<bytes.count {
                expectError(.truncated) { () throws(RoomError) in try AdmissionMessage.parse(bytes[0..<cut]) }
            }
            expectError(.trailingBytes) { () throws(RoomError) in try AdmissionMessage.parse((bytes + [0])[...]) }
        }
        let invite = Invite(host: host, room: testRoom, invitee: joiner.nodeID, expiresAt: 7)
        #expect(try Invite.parse(invite.encoded[...]) == invite)
        for cut in 0..<Invite.encodedLength {
            expectError(.truncated) { () throws(RoomError) in try Invite.parse(invite.encoded[0..<cut]) }
        }
        let pass = MembershipPass(host: host, room: testRoom, member: joiner.nodeID, issuedAt: 7)
        #expect(try MembershipPass.parse(pass.encoded[...]) == pass)
        expectError(.trailingBytes) { () throws(RoomError) in try MembershipPass.parse((pass.encoded + [1])[...]) }
        // Parsing works on a slice that does not start at index 0.
        let framed = [UInt8(4)] + AdmissionMessage.request(AdmissionRequest(room: testRoom, proof: .none)).encoded
        #expect(try AdmissionMessage.parse(framed[1...]) == .request(AdmissionRequest(room: testRoom, proof: .none)))
    }

    @Test func unknownTypesAndBadKeysAreErrors() {
        let room = testRoom.bytes
        expectError(.unknownMessage(3)) { () throws(RoomError) in try AdmissionMessage.parse(([3] + room + [0])[...]) }
        expectError(.unknownMessage(0)) { () throws(RoomError) in try AdmissionMessage.parse([0][...]) }
        expectError(.unknownProof(3)) { () throws(RoomError) in try AdmissionMessage.parse(([1] + room + [3])[...]) }
        expectError(.unknownResult(2)) { () throws(RoomError) in try AdmissionMessage.parse(([2] + room + [2])[...]) }
        expectError(.unknownDenial(0)) { () throws(RoomError) in try AdmissionMessage.parse(([2] + room + [1, 0])[...]) }
        expectError(.unknownDenial(7)) { () throws(RoomError) in try AdmissionMessage.parse(([2] + room + [1, 7])[...]) }
        // A pass whose member is not a usable Ed25519 key.
        var bytes = AdmissionMessage.response(AdmissionResponse(
            room: testRoom, result: .admitted(pass: MembershipPass(host: host, room: testRoom, member: joiner.nodeID, issuedAt: 1)))).encoded
        let badKey = [UInt8](repeating: 0, count: 32)
        #expect((try? NodeID(publicKey: badKey)) == nil)
        bytes.replaceSubrange(19..<51, with: badKey)
        expectError(.badNodeID) { () throws(RoomError) in try AdmissionMessage.parse(bytes[...]) }
    }
}
