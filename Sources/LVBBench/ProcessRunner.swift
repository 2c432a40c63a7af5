#if canImport(Glibc)
import Glibc
#endif

// Child processes, files and clocks for the benches, without Foundation: posix_spawn,
// pipes read on a background thread, waitpid, kill and /proc.

enum ProcessRunner {
    /// Monotonic seconds.
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Wall-clock milliseconds since the Unix epoch (what event timestamps count).
    static func wallMilliseconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) * 1000 + Double(ts.tv_nsec) / 1e6
    }

    static func sleep(_ seconds: Double) {
        guard seconds > 0 else { return }
        var ts = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
        var rest = timespec()
        while nanosleep(&ts, &rest) != 0 && errno == EINTR { ts = rest }
    }

    static func findExecutable(_ name: String) -> String? {
        guard let path = getenv("PATH") else { return nil }
        return String(cString: path).split(separator: ":").map { "\($0)/\(name)" }
            .first { access($0, X_OK) == 0 }
    }

    /// A new directory under $TMPDIR (or /tmp) named `prefix`-XXXXXX, or the error text.
    static func makeTemporaryDirectory(_ prefix: String) -> Result<String, TextError> {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array((base + "/" + prefix + "-XXXXXX").utf8CString)
        guard let dir = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            return .failure(TextError("cannot create a temporary directory: " + String(cString: strerror(errno))))
        }
        return .success(String(cString: dir))
    }

    /// Runs `executable` with stdout and stderr into `output`; returns its exit status
    /// (-1 when it could not start or was killed by a signal).
    static func spawnAndWait(_ executable: String, _ arguments: [String], output: String) -> Int32 {
        guard let child = try? ChildProcess(executable, arguments, stdout: .file(output), stderr: .sameAsStdout) else {
            return -1
        }
        return child.waitForExit(timeout: .infinity) ?? -1
    }

    /// A pipe, both ends close-on-exec (so only the child given an end by dup2 has it);
    /// [read end, write end], nil on failure (errno set). (Glibc does not export pipe2.)
    static func makePipe() -> [Int32]? {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return fds
    }

    static func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var data: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { data += chunk[0..<n] } else if n == 0 { return data } else if errno != EINTR { return nil }
        }
    }

    static func readText(_ path: String) -> String {
        String(decoding: readFile(path) ?? [], as: UTF8.self)
    }

    /// The last non-empty line of a text file ("" when none).
    static func lastLine(_ path: String) -> String {
        readText(path).split(separator: "\n").last { !$0.allSatisfy { $0 == " " } }.map(String.init) ?? ""
    }
}

struct TextError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A pthread mutex (Foundation-free).
final class BenchLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(mutex, nil) }
    deinit { pthread_mutex_destroy(mutex); mutex.deallocate() }
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// One child process. Its stdout can be read as lines (a background thread drains the
/// pipe, so a chatty child never blocks on it). `terminate()` sends SIGTERM, then SIGKILL
/// after a grace period, and reaps it; every child still running when the bench exits
/// gets SIGKILL from an atexit handler.
final class ChildProcess: @unchecked Sendable {
    enum Output {
        /// A pipe read into `lines()`.
        case lines
        /// This descriptor (the caller keeps and closes it).
        case descriptor(Int32)
        /// A file, created or truncated.
        case file(String)
        /// stderr only: wherever stdout goes.
        case sameAsStdout
        case null
    }

    let pid: pid_t
    let name: String
    private let lock = BenchLock()
    private var buffered: [String] = []
    /// When each line of `buffered` arrived, wall-clock milliseconds (event timestamps are wall-clock too).
    private var arrivals: [Double] = []
    private var partial: [UInt8] = []
    private var exitStatus: Int32?

    /// Starts `executable`. `stdin` is a descriptor to read from (nil: /dev/null).
    init(_ executable: String, _ arguments: [String], stdin: Int32? = nil,
         stdout: Output = .lines, stderr: Output = .null) throws {
        name = executable.split(separator: "/").last.map(String.init) ?? executable
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdin {
            posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        var readEnd: Int32 = -1, writeEnd: Int32 = -1
        for (fd, output) in [(Int32(1), stdout), (Int32(2), stderr)] {
            switch output {
            case .lines:
                guard let fds = ProcessRunner.makePipe() else {
                    if readEnd >= 0 { close(readEnd); close(writeEnd) }
                    throw TextError("pipe: " + String(cString: strerror(errno)))
                }
                posix_spawn_file_actions_adddup2(&actions, fds[1], fd)
                posix_spawn_file_actions_addclose(&actions, fds[1])
                // The parent's write end is closed right after the spawn (below).
                readEnd = fds[0]
                writeEnd = fds[1]
            case .descriptor(let d):
                posix_spawn_file_actions_adddup2(&actions, d, fd)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .sameAsStdout:
                posix_spawn_file_actions_adddup2(&actions, 1, fd)
            case .null:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
            }
        }

        // Default dispositions for the signals a parent may ignore (ignored ones are inherited).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        if writeEnd >= 0 { close(writeEnd) }
        guard rc == 0 else {
            if readEnd >= 0 { close(readEnd) }
            throw TextError("cannot start \(executable): " + String(cString: strerror(rc)))
        }
        self.pid = pid
        Self.register(self)
        if readEnd >= 0 { startReader(readEnd) }
    }

    deinit { terminate() }

    // MARK: - Output

    /// The complete lines the child printed so far.
    func lines() -> [String] { lock.locked { buffered } }

    /// The complete lines so far from index `from`, each with when it arrived (wall-clock ms).
    func stampedLines(from: Int = 0) -> [(at: Double, line: String)] {
        lock.locked { Array(zip(arrivals, buffered).dropFirst(from)).map { (at: $0.0, line: $0.1) } }
    }

    /// SIGKILL at once (a crash, as far as its peers can tell), reaped.
    func crash() {
        if isRunning() {
            kill(pid, SIGKILL)
            waitForExit(timeout: .infinity)
        }
        Self.unregister(self)
    }

    /// Waits until the child has printed a line for which `matches` holds; nil when it
    /// exits or `timeout` passes first.
    func waitForLine(timeout: Double, _ matches: (String) -> Bool) -> String? {
        let deadline = ProcessRunner.now() + timeout
        var seen = 0, exited = false
        while true {
            let fresh = lock.locked { Array(buffered[seen...]) }
            seen += fresh.count
            if let line = fresh.first(where: matches) { return line }
            if exited { return nil }
            if !isRunning() {
                // Exited: give the reader a moment to take the last lines out of the pipe.
                exited = true
                ProcessRunner.sleep(0.1)
                continue
            }
            if ProcessRunner.now() >= deadline { return nil }
            ProcessRunner.sleep(0.005)
        }
    }

    private func startReader(_ fd: Int32) {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(ReaderContext(child: self, fd: fd))
        let rc = pthread_create(&thread, nil, { arg in
            // invariant: the argument is the retained ReaderContext passed below
            let context = Unmanaged<ReaderContext>.fromOpaque(arg!).takeRetainedValue()
            context.child?.drain(context.fd)
            close(context.fd)
            return nil
        }, box.toOpaque())
        if rc == 0 {
            pthread_detach(thread)
        } else {
            box.release()
            close(fd)
        }
    }

    private final class ReaderContext {
        weak var child: ChildProcess?
        let fd: Int32
        init(child: ChildProcess, fd: Int32) { self.child = child; self.fd = fd }
    }

    /// Reads the pipe to its end, splitting lines into `buffered`.
    fileprivate func drain(_ fd: Int32) {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            lock.locked {
                for byte in chunk[0..<n] {
                    if byte == UInt8(ascii: "\n") {
                        buffered.append(String(decoding: partial, as: UTF8.self))
                        arrivals.append(ProcessRunner.wallMilliseconds())
                        partial.removeAll(keepingCapacity: true)
                    } else {
                        partial.append(byte)
                    }
                }
            }
        }
        lock.locked {
            if !partial.isEmpty {
                buffered.append(String(decoding: partial, as: UTF8.self))
                arrivals.append(ProcessRunner.wallMilliseconds())
            }
            partial = []
        }
    }

    // MARK: - Life

    /// Reaps the child if it has exited; true while it runs.
    func isRunning() -> Bool {
        lock.locked {
            guard exitStatus == nil else { return false }
            var status: Int32 = 0
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { exitStatus = status } else if r < 0 && errno != EINTR { exitStatus = -1 }
            return exitStatus == nil
        }
    }

    /// Waits for the child to exit; its exit status (-1 when killed by a signal), or nil
    /// when it still runs after `timeout` seconds.
    @discardableResult
    func waitForExit(timeout: Double) -> Int32? {
        let deadline = ProcessRunner.now() + timeout
        while isRunning() {
            if ProcessRunner.now() >= deadline { return nil }
            ProcessRunner.sleep(0.005)
        }
        return lock.locked {
            let status = exitStatus ?? -1
            return status & 0x7F == 0 ? (status >> 8) & 0xFF : -1
        }
    }

    /// SIGTERM, then SIGKILL after `grace` seconds; returns when the child is reaped.
    func terminate(grace: Double = 3) {
        if isRunning() {
            kill(pid, SIGTERM)
            if waitForExit(timeout: grace) == nil {
                kill(pid, SIGKILL)
                waitForExit(timeout: .infinity)
            }
        }
        Self.unregister(self)
    }

    /// utime + stime in seconds from /proc/PID/stat (all threads), nil when unreadable.
    func cpuSeconds() -> Double? {
        let text = ProcessRunner.readText("/proc/\(pid)/stat")
        // Fields after the command name (which may hold spaces) in parentheses:
        // state is field 3, utime 14, stime 15.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        return (utime + stime) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    // MARK: - Children left at exit

    private static let registryLock = BenchLock()
    nonisolated(unsafe) private static var live: [pid_t: Bool] = [:]
    nonisolated(unsafe) private static var atexitInstalled = false

    private static func register(_ child: ChildProcess) {
        registryLock.locked {
            live[child.pid] = true
            if !atexitInstalled {
                atexitInstalled = true
                atexit { ChildProcess.killAll() }
            }
        }
    }

    private static func unregister(_ child: ChildProcess) {
        registryLock.locked { _ = live.removeValue(forKey: child.pid) }
    }

    /// SIGKILL to every child not yet terminated (at exit).
    static func killAll() {
        let pids = registryLock.locked { Array(live.keys) }
        for pid in pids {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }
}
