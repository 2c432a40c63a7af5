/// A Noise SymmetricState (spec §5.2) for BLAKE2b (HASHLEN 64) and ChaChaPoly:
/// the chaining key `ck`, the handshake hash `h`, and the CipherState they key.
struct NoiseSymmetricState {
    private(set) var cipher = NoiseCipherState()
    private var ck: [UInt8]
    /// The handshake hash `h`: a transcript of everything sent, never secret.
    private(set) var h: [UInt8]

    // InitializeSymmetric (spec §5.2): a name of at most HASHLEN bytes is
    // zero-padded to HASHLEN, a longer one is hashed; ck = h.
    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        if name.count <= Blake2b.hashLength {
            h = name + [UInt8](repeating: 0, count: Blake2b.hashLength - name.count)
        } else {
            h = Blake2b.hash(name)
        }
        ck = h.map { $0 }  // its own buffer: ck is wiped, h is kept
    }

    var hasKey: Bool { cipher.hasKey }

    // MixHash (spec §5.2): h = HASH(h || data).
    mutating func mixHash(_ data: [UInt8]) {
        h = Blake2b.hash(h, data)
    }

    // MixKey (spec §5.2): ck, temp_k = HKDF(ck, ikm, 2); with HASHLEN 64 the
    // cipher key is temp_k truncated to 32 bytes.
    mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        var outputs = Blake2b.hkdf(chainingKey: ck, input: inputKeyMaterial, outputs: 2)
        secureZero(&ck)
        ck = outputs[0]
        let tempKey = Array(outputs[1].prefix(ChaChaPoly.keyLength))
        secureZero(&outputs[1])
        cipher.wipe()
        cipher = NoiseCipherState(derivedKey: tempKey)
    }

    // EncryptAndHash (spec §5.2): ciphertext = EncryptWithAd(h, plaintext); MixHash(ciphertext).
    mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let ciphertext = try cipher.encryptWithAd(h, plaintext: plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    // DecryptAndHash (spec §5.2): plaintext = DecryptWithAd(h, ciphertext); MixHash(ciphertext).
    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let plaintext = try cipher.decryptWithAd(h, ciphertext: ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    // Split (spec §5.2): temp_k1, temp_k2 = HKDF(ck, zerolen, 2), each truncated
    // to 32 bytes; the initiator sends with the first, the responder with the second.
    func split() -> (first: [UInt8], second: [UInt8]) {
        var outputs = Blake2b.hkdf(chainingKey: ck, input: [], outputs: 2)
        let first = Array(outputs[0].prefix(ChaChaPoly.keyLength))
        let second = Array(outputs[1].prefix(ChaChaPoly.keyLength))
        secureZero(&outputs[0])
        secureZero(&outputs[1])
        return (first, second)
    }

    /// Zeroes the chaining key and the cipher key; `h` stays for channel binding.
    mutating func wipe() {
        secureZero(&ck)
        cipher.wipe()
    }
}
