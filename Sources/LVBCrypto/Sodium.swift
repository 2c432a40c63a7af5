import CSodium
import LVBCore

/// libsodium's one-time initialisation and its CSPRNG as a `RandomSource`.
public enum Sodium {
    private static let initialized: Bool = sodium_init() >= 0

    /// Call before any libsodium function; cheap after the first time.
    @inline(__always)
    public static func ensureInitialized() {
        precondition(initialized, "libsodium failed to initialise")  // invariant: only fails if the CPU lacks basic support
    }
}

/// Random bytes from libsodium (getrandom on Linux).
public final class SodiumRandom: RandomSource, @unchecked Sendable {
    public static let shared = SodiumRandom()
    public init() { Sodium.ensureInitialized() }
    public func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }
}

/// Overwrites memory so keys do not linger after use.
@inline(__always)
public func secureZero(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { b in
        if let p = b.baseAddress { sodium_memzero(p, b.count) }
    }
}

/// Constant-time equality of two byte runs of equal length.
public func constantTimeEqual<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
where A.Element == UInt8, B.Element == UInt8 {
    let x = Array(a), y = Array(b)
    guard x.count == y.count else { return false }
    if x.isEmpty { return true }
    return x.withUnsafeBytes { px in y.withUnsafeBytes { py in sodium_memcmp(px.baseAddress!, py.baseAddress!, x.count) == 0 } }  // invariant: non-empty arrays have a base address
}
