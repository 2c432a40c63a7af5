/// Why a node identity or its key file could not be used; each description is
/// one line for the user saying what was wrong and what to do.
public enum IdentityError: Error, Equatable, CustomStringConvertible {
    /// A public key or seed was not 32 bytes long.
    case badKeyLength
    /// 32 bytes that are not a usable Ed25519 public key (no X25519 equivalent).
    case invalidPublicKey
    /// Text that is not a node id (52 base32 characters); carries the text given.
    case badText(String)
    /// The key file can be read or written by group or others.
    case insecurePermissions(path: String, mode: UInt32)
    /// The key file exists but does not hold a well-formed identity.
    case corruptKeyFile(path: String)
    /// A system call on `path` failed; `message` is strerror(errno).
    case io(path: String, message: String)

    public var description: String {
        switch self {
        case .badKeyLength:
            "key has the wrong length: node public keys and seeds are 32 bytes"
        case .invalidPublicKey:
            "not a valid node key: these 32 bytes are not a usable Ed25519 public key; check the node id"
        case let .badText(text):
            "'\(text.count > 64 ? text.prefix(64) + "…" : text)' is not a node id: expected 52 base32 characters (a-z, 2-7)"
        case let .insecurePermissions(path, mode):
            "identity key \(path) has mode \(String(mode & 0o7777, radix: 8)), so other users may read it; run `chmod 600 \(path)`"
        case let .corruptKeyFile(path):
            "identity key \(path) is corrupt and will NOT be replaced; move it away to create a new identity (a new node id)"
        case let .io(path, message):
            "cannot use \(path): \(message)"
        }
    }
}
