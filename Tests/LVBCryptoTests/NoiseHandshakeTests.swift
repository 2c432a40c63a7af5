import LVBCore
import TestAssertions
import Testing
@testable import LVBCrypto

/// Two ends of a handshake built from a seed, so every run sends the same bytes.
struct HandshakePair {
    let initiator: NoiseHandshake
    let responder: NoiseHandshake
    let initiatorStatic: NoiseKeyPair
    let responderStatic: NoiseKeyPair

    init(_ pattern: NoisePattern, seed: UInt64 = 7, initiatorBelievesResponderIs wrongKey: [UInt8]? = nil,
         responderExpects pinned: [UInt8]? = nil) throws {
        let random = SeededRandom(seed: seed)
        initiatorStatic = NoiseKeyPair.generate(random: random)
        responderStatic = NoiseKeyPair.generate(random: random)
        let remote = pattern == .IK ? (wrongKey ?? responderStatic.publicKey) : wrongKey
        initiator = try NoiseHandshake(pattern: pattern, role: .initiator, prologue: Array("lvb".utf8),
                                       localStatic: initiatorStatic, remoteStatic: remote, random: random)
        responder = try NoiseHandshake(pattern: pattern, role: .responder, prologue: Array("lvb".utf8),
                                       localStatic: responderStatic, remoteStatic: pinned, random: random)
    }

    func sides(_ index: Int) -> (writer: NoiseHandshake, reader: NoiseHandshake) {
        index % 2 == 0 ? (initiator, responder) : (responder, initiator)
    }
}

let payload = Array("hi!".utf8)


/// Expects every entry point of a failed handshake to answer `.failed`.
func expectDead(_ h: NoiseHandshake, sourceLocation: SourceLocation = #_sourceLocation) {
    expectError(.failed, { () throws(NoiseError) in try h.writeMessage(payload: []) }, sourceLocation: sourceLocation)
    expectError(.failed, { () throws(NoiseError) in try h.readMessage([UInt8](repeating: 0, count: 200)) },
                     sourceLocation: sourceLocation)
    expectError(.failed, { () throws(NoiseError) in try h.split() }, sourceLocation: sourceLocation)
    #expect(!h.isComplete && !h.isMyTurnToWrite, sourceLocation: sourceLocation)
}

@Suite struct NoiseHandshakeTests {
    @Test(arguments: [NoisePattern.IK, NoisePattern.XX])
    func bothSidesAgreeOnKeysAndIdentities(pattern: NoisePattern) throws {
        let p = try HandshakePair(pattern)
        expectError(.notComplete, { () throws(NoiseError) in try p.initiator.split() })
        for i in 0..<pattern.messages.count {
            let (w, r) = p.sides(i)
            #expect(try r.readMessage(try w.writeMessage(payload: payload)) == payload)
        }
        #expect(p.initiator.isComplete && p.responder.isComplete)
        #expect(p.initiator.handshakeHash == p.responder.handshakeHash && p.initiator.handshakeHash.count == 64)
        #expect(p.initiator.remoteStaticKey == p.responderStatic.publicKey)
        #expect(p.responder.remoteStaticKey == p.initiatorStatic.publicKey)
        let i = try p.initiator.split(), r = try p.responder.split()
        #expect(i.send == r.receive && i.receive == r.send && i.send.count == 32)
        #expect(!p.initiator.isMyTurnToWrite && !p.responder.isMyTurnToWrite)
    }

    @Test(arguments: [NoisePattern.IK, NoisePattern.XX])
    func wrongTurnIsOutOfOrderAndKillsTheHandshake(pattern: NoisePattern) throws {
        let a = try HandshakePair(pattern)
        expectError(.outOfOrder, { () throws(NoiseError) in try a.initiator.readMessage([UInt8](repeating: 1, count: 96)) })
        expectDead(a.initiator)
        expectError(.outOfOrder, { () throws(NoiseError) in try a.responder.writeMessage(payload: []) })
        expectDead(a.responder)

        // A replayed first message, once the responder has moved on.
        let b = try HandshakePair(pattern)
        let first = try b.initiator.writeMessage(payload: payload)
        _ = try b.responder.readMessage(first)
        expectError(.outOfOrder, { () throws(NoiseError) in try b.responder.readMessage(first) })
        expectDead(b.responder)

        // Nothing more to say once complete.
        let c = try HandshakePair(pattern)
        for i in 0..<pattern.messages.count { let (w, r) = c.sides(i); _ = try r.readMessage(try w.writeMessage(payload: [])) }
        expectError(.outOfOrder, { () throws(NoiseError) in try c.initiator.writeMessage(payload: []) })
        expectDead(c.initiator)
    }

    /// A flipped bit anywhere in any handshake message must stop the handshake:
    /// at once, or (for XX's unauthenticated first payload) at the next message.
    @Test(arguments: [NoisePattern.IK, NoisePattern.XX])
    func everySingleBitFlipIsRejected(pattern: NoisePattern) throws {
        let count = pattern.messages.count
        for target in 0..<count {
            let length = try messageLength(pattern, index: target)
            for bit in 0..<(length * 8) {
                let p = try HandshakePair(pattern)
                var rejected = false
                for i in 0..<count {
                    let (w, r) = p.sides(i)
                    var message = try w.writeMessage(payload: payload)
                    if i == target { message[bit / 8] ^= 1 << UInt8(bit % 8) }
                    do {
                        _ = try r.readMessage(message)
                    } catch {
                        #expect([.decryptFailed, .invalidKey, .malformed].contains(error), "message \(target) bit \(bit)")
                        expectDead(r)
                        rejected = true
                        break
                    }
                }
                #expect(rejected, "message \(target) bit \(bit) was accepted")
            }
        }
    }

    @Test(arguments: [NoisePattern.IK, NoisePattern.XX])
    func truncatedMessagesAreMalformed(pattern: NoisePattern) throws {
        for target in 0..<pattern.messages.count {
            let fixed = try messageLength(pattern, index: target) - payload.count
            for length in 0..<fixed {
                let p = try HandshakePair(pattern)
                for i in 0..<target { let (w, r) = p.sides(i); _ = try r.readMessage(try w.writeMessage(payload: payload)) }
                let (w, r) = p.sides(target)
                let message = try w.writeMessage(payload: payload)
                expectError(.malformed, { () throws(NoiseError) in try r.readMessage(Array(message.prefix(length))) })
                expectDead(r)
            }
        }
    }

    @Test func oversizedMessagesAreMalformed() throws {
        let p = try HandshakePair(.XX)
        expectError(.malformed, { () throws(NoiseError) in try p.initiator.writeMessage(payload: [UInt8](repeating: 0, count: 65535 - 31)) })
        let q = try HandshakePair(.XX)
        _ = try q.initiator.writeMessage(payload: [UInt8](repeating: 0, count: 65535 - 32))  // exactly the limit
        let r = try HandshakePair(.XX)
        expectError(.malformed, { () throws(NoiseError) in try r.responder.readMessage([UInt8](repeating: 9, count: 65536)) })
    }

    @Test func ikInitiatorNeedsTheResponderStaticKey() throws {
        let random = SeededRandom(seed: 3)
        expectError(.missingRemoteStatic, { () throws(NoiseError) in
            try NoiseHandshake(pattern: .IK, role: .initiator, prologue: [], localStatic: .generate(random: random), random: random)
        })
        expectError(.invalidKey, { () throws(NoiseError) in
            try NoiseHandshake(pattern: .IK, role: .initiator, prologue: [], localStatic: .generate(random: random),
                               remoteStatic: [1, 2, 3], random: random)
        })
        expectError(.invalidKey, { () throws(NoiseError) in
            try NoiseHandshake(pattern: .XX, role: .responder, prologue: [],
                               localStatic: NoiseKeyPair(privateKey: [1]), random: random)
        })
    }

    @Test func ikToTheWrongResponderKeyFails() throws {
        let stranger = NoiseKeyPair.generate(random: SeededRandom(seed: 99))
        let p = try HandshakePair(.IK, initiatorBelievesResponderIs: stranger.publicKey)
        let first = try p.initiator.writeMessage(payload: payload)
        expectError(.decryptFailed, { () throws(NoiseError) in try p.responder.readMessage(first) })
        expectDead(p.responder)
    }

    @Test func xxWithAPinnedPeerKeyRejectsAnyOther() throws {
        let stranger = NoiseKeyPair.generate(random: SeededRandom(seed: 99))
        let p = try HandshakePair(.XX, initiatorBelievesResponderIs: stranger.publicKey)
        _ = try p.responder.readMessage(try p.initiator.writeMessage(payload: []))
        let second = try p.responder.writeMessage(payload: [])
        expectError(.invalidKey, { () throws(NoiseError) in try p.initiator.readMessage(second) })
        expectDead(p.initiator)
    }

    @Test func lowOrderEphemeralIsInvalidKey() throws {
        let p = try HandshakePair(.IK)
        expectError(.invalidKey, { () throws(NoiseError) in try p.responder.readMessage([UInt8](repeating: 0, count: 96)) })
        expectDead(p.responder)
    }

    @Test func cipherStateRefusesTheReservedNonce() throws {
        var sender = try NoiseCipherState(key: [UInt8](repeating: 5, count: 32))
        var receiver = try NoiseCipherState(key: [UInt8](repeating: 5, count: 32))
        sender.setNonce(UInt64.max - 1)
        receiver.setNonce(UInt64.max - 1)
        let last = try sender.encryptWithAd([], plaintext: payload)
        expectError(.nonceExhausted, { () throws(NoiseError) in try sender.encryptWithAd([], plaintext: payload) })
        var tampered = last
        tampered[0] ^= 1
        expectError(.decryptFailed, { () throws(NoiseError) in try receiver.decryptWithAd([], ciphertext: tampered) })
        #expect(receiver.nonce == UInt64.max - 1)  // a failed decrypt does not use up the nonce
        #expect(try receiver.decryptWithAd([], ciphertext: last) == payload)
        expectError(.nonceExhausted, { () throws(NoiseError) in try receiver.decryptWithAd([], ciphertext: last) })
        expectError(.invalidKey, { () throws(NoiseError) in try NoiseCipherState(key: [1]) })
    }

    /// The length of handshake message `index` carrying `payload`, from a clean run.
    func messageLength(_ pattern: NoisePattern, index: Int) throws -> Int {
        let p = try HandshakePair(pattern)
        for i in 0..<index { let (w, r) = p.sides(i); _ = try r.readMessage(try w.writeMessage(payload: payload)) }
        return try p.sides(index).writer.writeMessage(payload: payload).count
    }
}
