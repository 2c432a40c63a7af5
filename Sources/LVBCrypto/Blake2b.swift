import CSodium

/// BLAKE2b (RFC 7693) through libsodium's crypto_generichash, plus the
/// keyed-MAC, HMAC and HKDF constructions the Noise framework and the cookie
/// mechanism build on it.
public enum Blake2b {
    /// Noise's HASHLEN for BLAKE2b.
    public static let hashLength = 64
    /// Noise's BLOCKLEN for BLAKE2b (HMAC block size).
    public static let blockLength = 128

    /// Unkeyed hash of the concatenation of `parts`, `length` bytes long (1...64).
    public static func hash(_ parts: [UInt8]..., length: Int = hashLength) -> [UInt8] {
        hash(parts: parts, key: nil, length: length)
    }

    /// Keyed BLAKE2b (its native MAC mode), as WireGuard's mac1/mac2 use it.
    public static func mac(key: [UInt8], _ parts: [UInt8]..., length: Int = 16) -> [UInt8] {
        hash(parts: parts, key: key, length: length)
    }

    public static func hash(parts: [[UInt8]], key: [UInt8]?, length: Int) -> [UInt8] {
        Sodium.ensureInitialized()
        // The state struct is 64-byte aligned, so Swift sees it as opaque.
        let raw = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        defer { sodium_memzero(raw, crypto_generichash_statebytes()); raw.deallocate() }
        let state = OpaquePointer(raw)
        var out = [UInt8](repeating: 0, count: length)
        if let key {
            _ = key.withUnsafeBufferPointer { crypto_generichash_init(state, $0.baseAddress, key.count, length) }
        } else {
            crypto_generichash_init(state, nil, 0, length)
        }
        for p in parts {
            _ = p.withUnsafeBufferPointer { crypto_generichash_update(state, $0.baseAddress, UInt64(p.count)) }
        }
        _ = out.withUnsafeMutableBufferPointer { crypto_generichash_final(state, $0.baseAddress!, length) }  // invariant: length ≥ 1
        return out
    }

    /// HMAC-BLAKE2b (RFC 2104 with BLOCKLEN 128, HASHLEN 64), Noise spec §4.3.
    public static func hmac(key: [UInt8], _ data: [UInt8]...) -> [UInt8] {
        var k = key.count > blockLength ? hash(key) : key
        k += [UInt8](repeating: 0, count: blockLength - k.count)
        var ipad = k.map { $0 ^ 0x36 }
        var opad = k.map { $0 ^ 0x5c }
        defer { secureZero(&k); secureZero(&ipad); secureZero(&opad) }
        var inner = hash(parts: [ipad] + data, key: nil, length: hashLength)
        defer { secureZero(&inner) }
        return hash(opad, inner)
    }

    /// Noise HKDF (spec §4.3): two or three outputs of HASHLEN bytes.
    public static func hkdf(chainingKey: [UInt8], input: [UInt8], outputs: Int) -> [[UInt8]] {
        precondition(outputs == 2 || outputs == 3, "Noise HKDF yields 2 or 3 outputs")  // invariant: only called with constants
        var tempKey = hmac(key: chainingKey, input)
        defer { secureZero(&tempKey) }
        let o1 = hmac(key: tempKey, [0x01])
        let o2 = hmac(key: tempKey, o1, [0x02])
        if outputs == 2 { return [o1, o2] }
        let o3 = hmac(key: tempKey, o2, [0x03])
        return [o1, o2, o3]
    }
}
