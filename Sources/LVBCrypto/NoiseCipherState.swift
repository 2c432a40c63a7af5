/// A Noise CipherState (spec §5.1): a ChaChaPoly key and the nonce counter that
/// is used once per message, in order, and never reused.
public struct NoiseCipherState: Sendable {
    /// Empty until InitializeKey; then exactly `ChaChaPoly.keyLength` bytes.
    private var key: [UInt8]
    /// The nonce `n` of the next message; 2^64-1 is reserved (spec §5.1).
    public private(set) var nonce: UInt64

    /// A CipherState with no key: EncryptWithAd/DecryptWithAd pass data through (spec §5.1).
    public init() {
        key = []
        nonce = 0
    }

    /// InitializeKey(k) (spec §5.1) with a 32-byte ChaChaPoly key; nonce starts at 0.
    public init(key: [UInt8]) throws(NoiseError) {
        guard key.count == ChaChaPoly.keyLength else { throw .invalidKey }
        self.key = key.map { $0 }  // a private buffer, so wipe() zeroes our copy only
        nonce = 0
    }

    /// A key this module derived itself (HKDF output truncated to 32 bytes), so
    /// its length is known; it is taken over without a copy.
    init(derivedKey: [UInt8]) {
        key = derivedKey
        nonce = 0
    }

    /// Whether a key is set (HasKey, spec §5.1).
    public var hasKey: Bool { !key.isEmpty }

    /// SetNonce (spec §5.1), for callers that carry explicit counters.
    public mutating func setNonce(_ n: UInt64) { nonce = n }

    /// EncryptWithAd (spec §5.1): seals with nonce `n`, then increments it.
    public mutating func encryptWithAd(_ ad: [UInt8], plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard hasKey else { return plaintext }
        guard nonce != UInt64.max else { throw .nonceExhausted }
        let out = ChaChaPoly.seal(key: key, counter: nonce, ad: ad, plaintext: plaintext)
        nonce += 1
        return out
    }

    /// DecryptWithAd (spec §5.1): opens with nonce `n`; on failure `n` is unchanged.
    public mutating func decryptWithAd(_ ad: [UInt8], ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard hasKey else { return ciphertext }
        guard nonce != UInt64.max else { throw .nonceExhausted }
        guard ciphertext.count >= ChaChaPoly.tagLength else { throw .malformed }
        guard let out = ChaChaPoly.open(key: key, counter: nonce, ad: ad, ciphertext: ciphertext) else {
            throw .decryptFailed
        }
        nonce += 1
        return out
    }

    /// Zeroes the key and forgets it; the state then has no key.
    public mutating func wipe() {
        secureZero(&key)
        key = []
        nonce = 0
    }
}
