import CSodium

/// A 32-byte symmetric key in memory that is zeroed when the key is retired
/// or released, so old session keys do not linger.
public final class SymmetricKey {
    private let storage: UnsafeMutableRawBufferPointer

    public init(_ bytes: [UInt8]) {
        precondition(bytes.count == 32, "symmetric keys are 32 bytes")  // invariant: only built from Noise split outputs
        storage = .allocate(byteCount: 32, alignment: 16)
        storage.copyBytes(from: bytes)
    }

    deinit {
        zero()
        storage.deallocate()
    }

    /// Wipes the key; it must not be used afterwards.
    public func zero() {
        sodium_memzero(storage.baseAddress!, storage.count)  // invariant: allocated non-empty
    }

    /// Encrypts `plaintext` with the Noise nonce for `counter` and no
    /// associated data; writes ciphertext+tag to `out`, returns its length.
    @inline(__always)
    public func seal(counter: UInt64, plaintext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        ChaChaPoly.seal(key: UnsafeRawBufferPointer(storage), counter: counter, ad: UnsafeRawBufferPointer(start: nil, count: 0),
                        plaintext: plaintext, into: out)
    }

    /// Verifies and decrypts; nil when the tag does not verify.
    @inline(__always)
    public func open(counter: UInt64, ciphertext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        ChaChaPoly.open(key: UnsafeRawBufferPointer(storage), counter: counter, ad: UnsafeRawBufferPointer(start: nil, count: 0),
                        ciphertext: ciphertext, into: out)
    }
}
