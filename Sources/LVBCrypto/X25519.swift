import CSodium

/// Curve25519 Diffie-Hellman (RFC 7748) for the Noise DH functions.
public enum X25519 {
    public static let keyLength = 32

    public static func publicKey(privateKey: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        guard privateKey.count == 32 else { return [] }
        var pub = [UInt8](repeating: 0, count: 32)
        crypto_scalarmult_base(&pub, privateKey)
        return pub
    }

    /// DH(priv, pub). Nil when the result is all zeros (a low-order point),
    /// which a peer could use to force a known shared secret.
    public static func sharedSecret(privateKey: [UInt8], publicKey: [UInt8]) -> [UInt8]? {
        Sodium.ensureInitialized()
        guard privateKey.count == 32, publicKey.count == 32 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        guard crypto_scalarmult(&out, privateKey, publicKey) == 0 else { return nil }
        return out
    }
}
