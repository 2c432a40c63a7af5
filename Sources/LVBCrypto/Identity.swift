import CSodium
import LVBCore
#if canImport(Glibc)
import Glibc
#endif

/// A node's public identity: its Ed25519 public key, shown as 52 base32 characters.
public struct NodeID: Hashable, Sendable, CustomStringConvertible {
    /// The Ed25519 public key, 32 bytes.
    public let publicKey: [UInt8]
    /// The X25519 key derived from `publicKey`: the node's Noise static key,
    /// so a Noise session authenticates the same node that signs its events.
    public let noiseStaticKey: [UInt8]

    public init(publicKey: [UInt8]) throws(IdentityError) {
        guard publicKey.count == crypto_sign_publickeybytes() else { throw .badKeyLength }
        // Gossip names the same few authors in every IHAVE, GRAFT and digest:
        // convert (and so validate) each key once, not once per id parsed.
        if let known = StaticKeyCache.shared.lookup(publicKey) {
            self.publicKey = publicKey
            noiseStaticKey = known
            return
        }
        Sodium.ensureInitialized()
        var x25519 = [UInt8](repeating: 0, count: X25519.keyLength)
        guard crypto_sign_ed25519_pk_to_curve25519(&x25519, publicKey) == 0 else { throw .invalidPublicKey }
        self.publicKey = publicKey
        noiseStaticKey = x25519
        StaticKeyCache.shared.store(publicKey, x25519)
    }

    /// Parses the 52-character base32 form (case-insensitive).
    public init(text: String) throws(IdentityError) {
        guard text.utf8.count == NodeID.textLength, let bytes = try? Base32.decode(text) else {
            throw .badText(text)
        }
        do {
            try self.init(publicKey: bytes)
        } catch {
            throw .badText(text)
        }
    }

    /// Base32 of 32 bytes: ⌈256 / 5⌉ characters.
    public static let textLength = 52

    public var text: String { Base32.encode(publicKey) }
    /// The first 8 characters, for logs and the console.
    public var short: String { String(text.prefix(8)) }
    public var description: String { text }

    // The static key follows from the public key, so equality and hashing use
    // the public key alone; its bytes are uniformly random, so 8 of them hash well.
    public static func == (a: NodeID, b: NodeID) -> Bool { a.publicKey == b.publicKey }

    public func hash(into hasher: inout Hasher) {
        var prefix: UInt64 = 0
        for i in 0..<8 { prefix = prefix << 8 | UInt64(publicKey[i]) }
        hasher.combine(prefix)
    }
}

/// A node's Ed25519 key pair (libsodium crypto_sign): signs room events and
/// yields the Noise static key bound to the node id.
public struct Identity: Sendable, CustomStringConvertible {
    public let nodeID: NodeID
    /// libsodium's 64-byte secret key: seed then public key.
    private let secretKey: [UInt8]

    /// A fresh identity from libsodium's CSPRNG.
    public static func generate() -> Identity {
        Sodium.ensureInitialized()
        var seed = [UInt8](repeating: 0, count: crypto_sign_seedbytes())
        randombytes_buf(&seed, seed.count)
        defer { secureZero(&seed) }
        return (try? Identity(seed: seed))!  // invariant: the seed is 32 bytes and a derived key always maps to X25519
    }

    /// The identity whose key pair libsodium derives from `seed` (32 bytes).
    public init(seed: [UInt8]) throws(IdentityError) {
        guard seed.count == crypto_sign_seedbytes() else { throw .badKeyLength }
        Sodium.ensureInitialized()
        var pk = [UInt8](repeating: 0, count: crypto_sign_publickeybytes())
        var sk = [UInt8](repeating: 0, count: crypto_sign_secretkeybytes())
        guard crypto_sign_seed_keypair(&pk, &sk, seed) == 0 else { throw .badKeyLength }
        nodeID = try NodeID(publicKey: pk)
        secretKey = sk
    }

    /// The 32-byte seed, which is all a key file needs to store.
    public var seed: [UInt8] { Array(secretKey.prefix(crypto_sign_seedbytes())) }

    /// A 64-byte detached Ed25519 signature of `message`.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: crypto_sign_bytes())
        crypto_sign_detached(&signature, nil, message, UInt64(message.count), secretKey)
        return signature
    }

    /// Whether `signature` is `by`'s valid signature of `message`.
    public static func verify(signature: [UInt8], message: [UInt8], by: NodeID) -> Bool {
        guard signature.count == crypto_sign_bytes() else { return false }
        Sodium.ensureInitialized()
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), by.publicKey) == 0
    }

    /// The X25519 key pair for Noise, converted from the Ed25519 secret key;
    /// its public half equals `nodeID.noiseStaticKey`.
    public var noiseStatic: NoiseKeyPair {
        var x25519 = [UInt8](repeating: 0, count: X25519.keyLength)
        crypto_sign_ed25519_sk_to_curve25519(&x25519, secretKey)
        return NoiseKeyPair(privateKey: x25519)
    }

    /// Shows the node id only, so logs never carry the secret key.
    public var description: String { "Identity(\(nodeID))" }
}

/// Valid Ed25519 keys seen recently and their X25519 forms (bounded; shared by
/// every event loop, hence the lock).
final class StaticKeyCache: @unchecked Sendable {
    static let shared = StaticKeyCache()
    static let capacity = 4096
    private var entries: [[UInt8]: [UInt8]] = [:]
    private var mutex = pthread_mutex_t()

    init() { pthread_mutex_init(&mutex, nil) }

    func lookup(_ key: [UInt8]) -> [UInt8]? {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return entries[key]
    }

    func store(_ key: [UInt8], _ x25519: [UInt8]) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
        entries[key] = x25519
    }
}
