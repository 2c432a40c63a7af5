import CSodium

/// ChaCha20-Poly1305 (RFC 8439, the IETF variant) with Noise's nonce layout:
/// 32 bits of zeros then the 64-bit counter, little-endian (Noise spec §12.3).
public enum ChaChaPoly {
    public static let keyLength = 32
    public static let tagLength = 16

    /// The 96-bit nonce on the stack: 4 zero bytes, then the counter little-endian.
    @inline(__always)
    static func nonce(_ counter: UInt64) -> (UInt32, UInt32, UInt32) {
        (0, UInt32(truncatingIfNeeded: counter).littleEndian, UInt32(truncatingIfNeeded: counter >> 32).littleEndian)
    }

    /// Encrypts `plaintext` and appends ciphertext + tag to `out`.
    public static func seal(key: UnsafeRawBufferPointer, counter: UInt64, ad: UnsafeRawBufferPointer,
                            plaintext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        Sodium.ensureInitialized()
        var n = nonce(counter)
        var clen: UInt64 = 0
        withUnsafeBytes(of: &n) { np in
            _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                out.baseAddress!.assumingMemoryBound(to: UInt8.self), &clen,  // invariant: callers pass a sized buffer
                plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
                nil, np.baseAddress!.assumingMemoryBound(to: UInt8.self), key.baseAddress!.assumingMemoryBound(to: UInt8.self))  // invariant: fixed-size nonce and 32-byte keys
        }
        return Int(clen)
    }

    /// Decrypts and verifies; returns the plaintext length, or nil if the tag
    /// does not verify (nothing is written to `out` then that can be trusted).
    public static func open(key: UnsafeRawBufferPointer, counter: UInt64, ad: UnsafeRawBufferPointer,
                            ciphertext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        Sodium.ensureInitialized()
        guard ciphertext.count >= tagLength else { return nil }
        var n = nonce(counter)
        var mlen: UInt64 = 0
        let rc = withUnsafeBytes(of: &n) { np in
            crypto_aead_chacha20poly1305_ietf_decrypt(
                out.baseAddress?.assumingMemoryBound(to: UInt8.self), &mlen, nil,
                ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),  // invariant: count ≥ 16 checked above
                ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
                np.baseAddress!.assumingMemoryBound(to: UInt8.self), key.baseAddress!.assumingMemoryBound(to: UInt8.self))  // invariant: fixed-size nonce and 32-byte keys
        }
        return rc == 0 ? Int(mlen) : nil
    }

    /// Array convenience for handshake messages (not the packet path).
    public static func seal(key: [UInt8], counter: UInt64, ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        let n = key.withUnsafeBytes { k in ad.withUnsafeBytes { a in plaintext.withUnsafeBytes { p in
            out.withUnsafeMutableBytes { o in seal(key: k, counter: counter, ad: a, plaintext: p, into: o) } } } }
        out.removeLast(out.count - n)
        return out
    }

    public static func open(key: [UInt8], counter: UInt64, ad: [UInt8], ciphertext: [UInt8]) -> [UInt8]? {
        guard ciphertext.count >= tagLength else { return nil }
        var out = [UInt8](repeating: 0, count: ciphertext.count - tagLength)
        let n = key.withUnsafeBytes { k in ad.withUnsafeBytes { a in ciphertext.withUnsafeBytes { c in
            out.withUnsafeMutableBytes { o in open(key: k, counter: counter, ad: a, ciphertext: c, into: o) } } } }
        return n == nil ? nil : out
    }
}

/// XChaCha20-Poly1305 with a random 24-byte nonce, used for cookie replies
/// (as WireGuard does), where no counter is shared.
public enum XChaChaPoly {
    public static let nonceLength = 24

    public static func seal(key: [UInt8], nonce: [UInt8], ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        precondition(key.count == 32 && nonce.count == nonceLength, "XChaChaPoly key/nonce length")  // invariant: callers derive both locally
        var out = [UInt8](repeating: 0, count: plaintext.count + ChaChaPoly.tagLength)
        var clen: UInt64 = 0
        crypto_aead_xchacha20poly1305_ietf_encrypt(&out, &clen, plaintext, UInt64(plaintext.count),
                                                   ad, UInt64(ad.count), nil, nonce, key)
        return out
    }

    public static func open(key: [UInt8], nonce: [UInt8], ad: [UInt8], ciphertext: [UInt8]) -> [UInt8]? {
        Sodium.ensureInitialized()
        guard ciphertext.count >= ChaChaPoly.tagLength, nonce.count == nonceLength, key.count == 32 else { return nil }
        var out = [UInt8](repeating: 0, count: ciphertext.count - ChaChaPoly.tagLength)
        var mlen: UInt64 = 0
        let rc = crypto_aead_xchacha20poly1305_ietf_decrypt(&out, &mlen, nil, ciphertext, UInt64(ciphertext.count),
                                                            ad, UInt64(ad.count), nonce, key)
        return rc == 0 ? out : nil
    }
}
