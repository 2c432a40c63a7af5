import CSodium

/// Turns a private room's password into its 32-byte room key with Argon2id
/// (libsodium crypto_pwhash, INTERACTIVE limits: 2 passes over 64 MiB), so a
/// join proof captured or guessed offline costs an attacker a memory-hard hash
/// per guess.
///
///     salt = BLAKE2b-128("lvbnode room password v1" ‖ room id (16))
///     key  = Argon2id13(password UTF-8, salt, ops INTERACTIVE, mem INTERACTIVE, 32 bytes)
///
/// The salt ties the key to the room, so one password used for two rooms
/// gives two unrelated keys. Deriving takes tens of milliseconds and 64 MiB:
/// call it off the event loop.
public enum PasswordKey {
    public static let keyLength = 32
    public static let roomIDLength = 16
    /// Longest password accepted, in UTF-8 bytes.
    public static let maxPasswordLength = 1024
    static let saltContext = Array("lvbnode room password v1".utf8)

    /// The room key for `password` (UTF-8) in the room whose id is `roomID`.
    public static func derive(password: String, roomID: [UInt8]) throws(PasswordKeyError) -> [UInt8] {
        var bytes = Array(password.utf8)
        defer { secureZero(&bytes) }
        return try derive(password: bytes, roomID: roomID)
    }

    /// The room key for the password bytes `password` in room `roomID`.
    public static func derive(password: [UInt8], roomID: [UInt8]) throws(PasswordKeyError) -> [UInt8] {
        guard !password.isEmpty else { throw .emptyPassword }
        guard password.count <= maxPasswordLength else { throw .passwordTooLong(max: maxPasswordLength) }
        guard roomID.count == roomIDLength else { throw .badRoomID }
        Sodium.ensureInitialized()
        let salt = Blake2b.hash(saltContext, roomID, length: crypto_pwhash_argon2id_saltbytes())
        var key = [UInt8](repeating: 0, count: keyLength)
        let status = password.withUnsafeBytes { pw in
            key.withUnsafeMutableBufferPointer { out in
                crypto_pwhash(out.baseAddress!, UInt64(keyLength),  // invariant: keyLength > 0
                              pw.bindMemory(to: CChar.self).baseAddress!, UInt64(pw.count),  // invariant: checked non-empty
                              salt,
                              UInt64(crypto_pwhash_argon2id_opslimit_interactive()),
                              crypto_pwhash_argon2id_memlimit_interactive(),
                              crypto_pwhash_argon2id_alg_argon2id13())
            }
        }
        guard status == 0 else {
            secureZero(&key)
            throw .outOfMemory
        }
        return key
    }
}

/// Why a room key could not be derived from a password; each description is
/// one line for the user.
public enum PasswordKeyError: Error, Equatable, CustomStringConvertible {
    /// The password is empty.
    case emptyPassword
    /// The password is longer than `max` UTF-8 bytes.
    case passwordTooLong(max: Int)
    /// The room id is not 16 bytes.
    case badRoomID
    /// Argon2id could not get its 64 MiB of memory.
    case outOfMemory

    public var description: String {
        switch self {
        case .emptyPassword: "the room password is empty; give a password or leave the room open"
        case let .passwordTooLong(max): "the room password is too long: at most \(max) bytes"
        case .badRoomID: "a room id is 16 bytes"
        case .outOfMemory: "not enough memory to derive the room key from the password (Argon2id needs 64 MiB)"
        }
    }
}
