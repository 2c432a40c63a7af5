import Foundation
import LVBCore
import Testing
@testable import LVBCrypto

/// One cacophony vector (github.com/centromere/cacophony format).
struct CacophonyVector: Decodable {
    struct Message: Decodable { let payload: String; let ciphertext: String }
    let protocolName: String
    let initPrologue: String
    let initStatic: String?
    let initEphemeral: String
    let initRemoteStatic: String?
    let respPrologue: String
    let respStatic: String?
    let respEphemeral: String
    let handshakeHash: String
    let messages: [Message]
}

struct CacophonyFile: Decodable { let vectors: [CacophonyVector] }

enum VectorError: Error { case missingFixture, missingVector(String), missingKey(String) }

func loadVector(_ name: String) throws -> CacophonyVector {
    guard let url = Bundle.module.url(forResource: "noise-cacophony", withExtension: "json", subdirectory: "Fixtures")
    else { throw VectorError.missingFixture }
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    let file = try decoder.decode(CacophonyFile.self, from: Data(contentsOf: url))
    guard let vector = file.vectors.first(where: { $0.protocolName == name }) else { throw VectorError.missingVector(name) }
    return vector
}

func hex(_ text: String?) throws -> [UInt8] {
    guard let text else { throw VectorError.missingKey("absent key in vector") }
    return try Hex.decode(text)
}

@Suite struct NoiseVectorTests {
    @Test(arguments: [NoisePattern.IK, NoisePattern.XX])
    func cacophonyVectorReproducedByteForByte(pattern: NoisePattern) throws {
        let v = try loadVector(pattern.protocolName)
        let random = SeededRandom(seed: 1)  // unused: the vector fixes both ephemerals
        let initiator = try NoiseHandshake(
            pattern: pattern, role: .initiator, prologue: try hex(v.initPrologue),
            localStatic: NoiseKeyPair(privateKey: try hex(v.initStatic)),
            remoteStatic: pattern == .IK ? try hex(v.initRemoteStatic) : nil,
            localEphemeral: NoiseKeyPair(privateKey: try hex(v.initEphemeral)), random: random)
        let responder = try NoiseHandshake(
            pattern: pattern, role: .responder, prologue: try hex(v.respPrologue),
            localStatic: NoiseKeyPair(privateKey: try hex(v.respStatic)),
            localEphemeral: NoiseKeyPair(privateKey: try hex(v.respEphemeral)), random: random)

        let handshakeCount = pattern.messages.count
        #expect(v.messages.count > handshakeCount)
        // Cacophony alternates directions over the whole list: even index = initiator → responder.
        for (i, message) in v.messages.prefix(handshakeCount).enumerated() {
            let (writer, reader) = i % 2 == 0 ? (initiator, responder) : (responder, initiator)
            #expect(writer.isMyTurnToWrite && !reader.isMyTurnToWrite)
            let payload = try hex(message.payload)
            let ciphertext = try writer.writeMessage(payload: payload)
            #expect(Hex.encode(ciphertext) == message.ciphertext, "handshake message \(i)")
            #expect(try reader.readMessage(ciphertext) == payload, "handshake message \(i)")
            #expect(writer.messageIndex == i + 1 && reader.messageIndex == i + 1)
        }
        #expect(initiator.isComplete && responder.isComplete)
        #expect(Hex.encode(initiator.handshakeHash) == v.handshakeHash)
        #expect(Hex.encode(responder.handshakeHash) == v.handshakeHash)
        #expect(initiator.remoteStaticKey == NoiseKeyPair(privateKey: try hex(v.respStatic)).publicKey)
        #expect(responder.remoteStaticKey == NoiseKeyPair(privateKey: try hex(v.initStatic)).publicKey)

        let iKeys = try initiator.split(), rKeys = try responder.split()
        #expect(iKeys.send == rKeys.receive && iKeys.receive == rKeys.send && iKeys.send != iKeys.receive)
        var iSend = try NoiseCipherState(key: iKeys.send), iReceive = try NoiseCipherState(key: iKeys.receive)
        var rSend = try NoiseCipherState(key: rKeys.send), rReceive = try NoiseCipherState(key: rKeys.receive)
        for (i, message) in v.messages.enumerated().dropFirst(handshakeCount) {
            let payload = try hex(message.payload)
            let ciphertext: [UInt8], opened: [UInt8]
            if i % 2 == 0 {
                ciphertext = try iSend.encryptWithAd([], plaintext: payload)
                opened = try rReceive.decryptWithAd([], ciphertext: ciphertext)
            } else {
                ciphertext = try rSend.encryptWithAd([], plaintext: payload)
                opened = try iReceive.decryptWithAd([], ciphertext: ciphertext)
            }
            #expect(Hex.encode(ciphertext) == message.ciphertext, "transport message \(i)")
            #expect(opened == payload, "transport message \(i)")
        }
    }

    @Test func protocolNamesMatchTheSpecForm() {
        #expect(NoisePattern.IK.protocolName == "Noise_IK_25519_ChaChaPoly_BLAKE2b")
        #expect(NoisePattern.XX.protocolName == "Noise_XX_25519_ChaChaPoly_BLAKE2b")
    }
}
