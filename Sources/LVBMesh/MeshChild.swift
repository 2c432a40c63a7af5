import CSpawn
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// One process the mesh runs: its stdout and stderr read as lines on the
/// mesh's event loop, its stdin written from it (console commands). The
/// mesh reaps it (`poll`) and ends it (`terminate`, `kill`); nothing else
/// here keeps a thread.
public final class MeshChild {
    public let name: String
    public let pid: pid_t
    public private(set) var status: Int32?
    private var input: Channel?

    /// Longest line kept from a child; a longer one is cut there.
    public static let maxLine = 256 * 1024

    private init(name: String, pid: pid_t) {
        self.name = name
        self.pid = pid
    }

    /// Starts `executable` with `arguments`. `onLine` gets each stdout line,
    /// `onError` each stderr line, both on `loop`.
    public static func spawn(_ name: String, executable: String, arguments: [String], loop: EventLoop,
                             onLine: @escaping (ByteBuffer) -> Void, onError: @escaping (ByteBuffer) -> Void) throws(MeshError) -> MeshChild {
        var made: [(read: Int32, write: Int32)] = []
        for _ in 0..<3 {
            guard let p = pipe() else {
                let why = String(cString: strerror(errno))
                for p in made { close(p.read); close(p.write) }
                throw .cannotStart(name, "pipe: " + why)
            }
            made.append(p)
        }
        let (stdin, stdout, stderr) = (made[0], made[1], made[2])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin.read, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout.write, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr.write, 2)
        // Signals the mesh ignores or handles go back to their defaults in the child.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        // Only the three pipes go to the child: every other descriptor of the
        // mesh (its page's listening socket, other children's pipes) is
        // closed in the child, or it would keep them open.
        lvb_spawn_close_from(&actions, 3)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        for fd in [stdin.read, stdout.write, stderr.write] { close(fd) }
        guard rc == 0 else {
            for fd in [stdin.write, stdout.read, stderr.read] { close(fd) }
            throw .cannotStart(name, String(cString: strerror(rc)))
        }
        let child = MeshChild(name: name, pid: pid)
        _ = NIOPipeBootstrap(group: loop)
            .channelInitializer { $0.pipeline.addHandler(LineReader(onLine)) }
            .takingOwnershipOfDescriptor(input: stdout.read)
        _ = NIOPipeBootstrap(group: loop)
            .channelInitializer { $0.pipeline.addHandler(LineReader(onError)) }
            .takingOwnershipOfDescriptor(input: stderr.read)
        NIOPipeBootstrap(group: loop).takingOwnershipOfDescriptor(output: stdin.write).whenSuccess { [child] in child.input = $0 }
        return child
    }

    /// Writes one console line to the child's stdin (dropped once it is gone).
    public func send(_ line: String) {
        guard status == nil, let input else { return }
        var buffer = input.allocator.buffer(capacity: line.utf8.count + 1)
        buffer.writeString(line)
        buffer.writeInteger(UInt8(ascii: "\n"))
        input.writeAndFlush(buffer, promise: nil)
    }

    /// Reaps the child if it has exited: its exit status (128 + signal when
    /// killed), once; nil while it runs.
    public func poll() -> Int32? {
        guard status == nil else { return nil }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as macros.
        let signal = raw & 0x7F
        let code = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
        status = code
        input?.close(promise: nil)
        input = nil
        return code
    }

    public var isRunning: Bool { status == nil }

    /// Asks it to leave (SIGTERM: a node leaves its room cleanly).
    public func terminate() { if status == nil { Glibc.kill(pid, SIGTERM) } }

    /// Ends it at once (SIGKILL: a crash, as far as the room can tell).
    public func kill() { if status == nil { Glibc.kill(pid, SIGKILL) } }

    private static func pipe() -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [-1, -1]
        guard Glibc.pipe(&fds) == 0 else { return nil }
        // Only the child given an end (by dup2) has it: no other child keeps a pipe open.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }
}

public enum MeshError: Error, CustomStringConvertible, Equatable {
    case cannotStart(String, String)
    case failedToStart(String, String)

    public var description: String {
        switch self {
        case let .cannotStart(name, why): "cannot start \(name): \(why)"
        case let .failedToStart(name, why): "\(name) did not start: \(why)"
        }
    }
}

/// Splits a pipe's bytes into lines (without the newline).
final class LineReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private var partial: ByteBuffer?
    private let onLine: (ByteBuffer) -> Void

    init(_ onLine: @escaping (ByteBuffer) -> Void) { self.onLine = onLine }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        while let newline = bytes.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - bytes.readerIndex
            guard var line = bytes.readSlice(length: length) else { return }
            bytes.moveReaderIndex(forwardBy: 1)
            if var head = partial {
                head.writeBuffer(&line)
                line = head
                partial = nil
            }
            onLine(line)
        }
        guard bytes.readableBytes > 0 else { return }
        if partial == nil {
            partial = bytes
        } else if partial!.readableBytes < MeshChild.maxLine {
            partial!.writeBuffer(&bytes)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let rest = partial, rest.readableBytes > 0 { onLine(rest) }
        partial = nil
        context.fireChannelInactive()
    }
}
