#if canImport(Glibc)
import Glibc
#endif

/// The few file operations replays need, on POSIX calls (the binary is
/// static and takes no Foundation).
enum ReplayFiles {
    static func errnoText() -> String { String(cString: strerror(errno)) }

    /// The whole file, at most `limit` bytes.
    static func read(_ path: String, limit: Int) throws(ReplayError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .file("\(path): cannot read (\(errnoText()))") }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw .file("\(path): cannot read (\(errnoText()))") }
            if n == 0 { return out }
            guard out.count + n <= limit else { throw .file("\(path): larger than \(limit) bytes") }
            out += chunk[..<n]
        }
    }

    /// Writes `bytes` to `path` whole or not at all: into a temporary file
    /// beside it, then renamed over it.
    static func writeAtomically(_ path: String, _ bytes: [UInt8]) throws(ReplayError) {
        let temporary = path + ".part"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .file("\(temporary): cannot create (\(errnoText()))") }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                let why = errnoText()
                close(fd)
                unlink(temporary)
                throw .file("\(path): cannot write (\(why))")
            }
            done += n
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let why = errnoText()
            unlink(temporary)
            throw .file("\(path): cannot write (\(why))")
        }
    }

    /// Creates `path` (and its parent) if missing; checks it is a writable directory.
    static func prepareDirectory(_ path: String, option: String) throws(ReplayError) {
        var st = stat()
        if stat(path, &st) != 0 {
            let parent = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
            if !parent.isEmpty, stat(parent, &st) != 0 { mkdir(parent, 0o700) }
            guard mkdir(path, 0o755) == 0 else { throw .file("\(option) \(path): cannot create the directory (\(errnoText()))") }
            return
        }
        guard st.st_mode & S_IFMT == S_IFDIR else { throw .file("\(option) \(path): not a directory; give a directory for replays") }
        guard access(path, W_OK) == 0 else { throw .file("\(option) \(path): the directory is not writable; give one that is") }
    }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
    }

    /// The names in a directory (no dot entries); empty if it cannot be read.
    static func entries(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func size(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// Removes a directory of files (one level, as a replay's).
    static func removeDirectory(_ dir: String) throws(ReplayError) {
        for name in entries(dir) where unlink(dir + "/" + name) != 0 {
            throw .file("\(dir)/\(name): cannot delete (\(errnoText()))")
        }
        guard rmdir(dir) == 0 else { throw .file("\(dir): cannot delete (\(errnoText()))") }
    }

    /// Bytes free for an unprivileged user on the disk holding `path`.
    static func freeBytes(_ path: String) -> Int64? {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }
}
