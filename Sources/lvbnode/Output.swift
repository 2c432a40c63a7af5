#if canImport(Glibc)
import Glibc
#endif
import LVBCore
import LVBCrypto
import LVBTransport

/// Prints what happens to the user: one readable line per event (colour only
/// on a terminal), or one JSON object per line with `--json`. Flushed per line
/// so scripts reading a pipe see events as they happen.
final class Output: @unchecked Sendable {
    let json: Bool
    private let colour: Bool
    private let lock = NSLockish()
    /// stdout, or stderr when stdout carries media (`--video-out -`).
    private let stream: UnsafeMutablePointer<FILE>
    /// Every event's JSON text also goes here (the studio page, `--web`),
    /// but those emitted with `toPage: false`; set once before the node starts.
    var tee: ((String) -> Void)?

    init(json: Bool, toStderr: Bool = false) {
        self.json = json
        stream = toStderr ? stderr : stdout
        colour = !json && isatty(toStderr ? STDERR_FILENO : STDOUT_FILENO) == 1 && ProcessEnvironment.all["NO_COLOR"] == nil
    }

    /// Emits `line` as JSON, or `human` (with a kind tag) as text; an empty
    /// `human` is an event with no readable form, printed only as JSON.
    /// `toPage: false` keeps it from the studio page (a peer's `hello`:
    /// a page takes the hello it gets as its own greeting, its role).
    func emit(_ line: JSONLine, human: String, kind: String, toPage: Bool = true) {
        if toPage { tee?(line.text) }
        let text: String
        if json {
            text = line.text
        } else {
            if human.isEmpty { return }
            let tag = kind.padding(to: 9)
            text = "\(Self.clockText()) \(colour ? "\u{1b}[1;36m\(tag)\u{1b}[0m" : tag) \(human)"
        }
        lock.withLock {
            fputs(text + "\n", stream)
            fflush(stream)
        }
    }

    /// An event with no readable form (periodic stats): printed with
    /// `--json`, and handed to the page either way.
    func emitMachine(_ line: JSONLine) { emit(line, human: "", kind: "") }

    /// An `error` event: what was wrong, in one line.
    func error(_ message: String) {
        emit(JSONLine(event: "error", ("message", message)), human: message, kind: "error")
    }

    /// One line on stderr: what was wrong and what to do.
    static func fail(_ message: String) {
        fputs("lvbnode: error: \(message)\n", stderr)
    }

    /// One line on stderr: something was left alone, the command goes on.
    static func warn(_ message: String) {
        fputs("lvbnode: warning: \(message)\n", stderr)
    }

    static func clockText() -> String { LocalTime(SystemClock.shared.wallTime()).clockText }
}

/// A pthread mutex (Foundation-free).
final class NSLockish: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }
}

extension String {
    func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

extension Duration {
    var millisecondsText: String {
        let ms = milliseconds
        return ms < 10 ? String(Double(Int(ms * 100)) / 100) : String(Int(ms.rounded()))
    }
}
