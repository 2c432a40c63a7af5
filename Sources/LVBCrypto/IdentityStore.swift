#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import LVBCore

/// Keeps the node's identity in `<home>/identity.key` (mode 0600) as the line
/// `lvbnode-identity-v1 <base32 seed>`; never overwrites an existing file.
public enum IdentityStore {
    public static let fileName = "identity.key"
    static let header = "lvbnode-identity-v1"
    /// Far larger than a valid file; anything bigger is corrupt, not read whole.
    static let maxFileSize = 4096

    /// `$LVBNODE_HOME` if set, else `$HOME/.lvbnode` (no NSS lookup: the binary is static).
    public static func defaultHome(environment: [String: String]) -> String {
        if let home = environment["LVBNODE_HOME"], !home.isEmpty { return home }
        let user = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "."
        return user.hasSuffix("/") ? user + ".lvbnode" : user + "/.lvbnode"
    }

    /// Loads the identity in `home`, or creates one (and `home`, mode 0700) if there is none.
    public static func loadOrCreate(home: String) throws(IdentityError) -> (Identity, created: Bool) {
        try makeDirectories(home)
        let path = home.hasSuffix("/") ? home + fileName : home + "/" + fileName
        // Two attempts: if another process creates the file between our load and
        // our create, O_EXCL refuses and we load theirs instead.
        for _ in 0..<2 {
            if let identity = try load(path: path) { return (identity, false) }
            let identity = Identity.generate()
            if try create(path: path, identity: identity) { return (identity, true) }
        }
        throw .io(path: path, message: "the file appeared and vanished while being created; try again")
    }

    /// Nil when the file does not exist.
    static func load(path: String) throws(IdentityError) -> Identity? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            let err = errno
            if err == ENOENT { return nil }
            throw .io(path: path, message: String(cString: strerror(err)))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io(path: path, message: String(cString: strerror(errno))) }
        let mode = UInt32(info.st_mode)
        guard mode & UInt32(S_IFMT) == UInt32(S_IFREG) else { throw .corruptKeyFile(path: path) }
        guard mode & 0o077 == 0 else { throw .insecurePermissions(path: path, mode: mode & 0o7777) }

        var content = [UInt8](repeating: 0, count: maxFileSize + 1)
        defer { secureZero(&content) }
        var length = 0
        while length < content.count {
            let n = content.withUnsafeMutableBytes { read(fd, $0.baseAddress! + length, $0.count - length) }  // invariant: the buffer is non-empty
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw .io(path: path, message: String(cString: strerror(errno))) }
            if n == 0 { break }
            length += n
        }
        guard length <= maxFileSize, var seed = parse(content[..<length]) else { throw .corruptKeyFile(path: path) }
        defer { secureZero(&seed) }
        do {
            return try Identity(seed: seed)
        } catch {
            throw .corruptKeyFile(path: path)
        }
    }

    /// The seed in `lvbnode-identity-v1 <base32>\n` (the final newline optional), or nil.
    static func parse(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
        var line = bytes
        if line.last == UInt8(ascii: "\n") { line = line.dropLast() }
        let prefix = Array((header + " ").utf8)
        guard line.starts(with: prefix) else { return nil }
        let encoded = line.dropFirst(prefix.count)
        guard encoded.count == NodeID.textLength,
              encoded.allSatisfy({ (97...122).contains($0) || (50...55).contains($0) }),
              let seed = try? Base32.decode(String(decoding: encoded, as: UTF8.self)),
              seed.count == 32
        else { return nil }
        return seed
    }

    /// False when the file already exists (someone else created it first).
    static func create(path: String, identity: Identity) throws(IdentityError) -> Bool {
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            let err = errno
            if err == EEXIST { return false }
            throw .io(path: path, message: String(cString: strerror(err)))
        }
        var content = Array("\(header) \(Base32.encode(identity.seed))\n".utf8)
        defer { secureZero(&content) }
        var failure: Int32 = 0
        if fchmod(fd, 0o600) != 0 { failure = errno }  // exactly 0600 whatever the umask
        var written = 0
        while failure == 0 && written < content.count {
            let n = content.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }  // invariant: the buffer is non-empty
            if n < 0 { if errno != EINTR { failure = errno } } else { written += n }
        }
        if failure == 0 && fsync(fd) != 0 { failure = errno }
        if close(fd) != 0 && failure == 0 { failure = errno }
        guard failure == 0 else {
            unlink(path)  // ours (O_EXCL) and incomplete: leaving it would look like a corrupt key
            throw .io(path: path, message: String(cString: strerror(failure)))
        }
        return true
    }

    /// Creates `path` and any missing parents with mode 0700.
    static func makeDirectories(_ path: String) throws(IdentityError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o700) != 0 && errno != EEXIST {
                throw .io(path: current, message: String(cString: strerror(errno)))
            }
        }
    }
}
