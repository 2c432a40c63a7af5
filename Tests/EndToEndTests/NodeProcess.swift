import Foundation
import LVBMedia
import Testing

/// The built `lvbnode` binary run as a separate process, its `--json` lines
/// collected as they arrive and its stdin open for console commands.
final class NodeProcess: @unchecked Sendable {
    let process = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let lock = NSLock()
    private var lines: [[String: Any]] = []
    private var errText = ""
    private var outText = ""
    private var partial = Data()

    /// The binary under test: $LVBNODE_BIN (the static release build in
    /// Scripts/test), else the debug build next to the test bundle.
    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["LVBNODE_BIN"] { return URL(fileURLWithPath: path) }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("lvbnode")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/lvbnode")
    }

    /// `executable` and `prefix`: run the binary through another program
    /// (`ip netns exec NS lvbnode …` puts it in a network namespace).
    init(_ arguments: [String], executable: URL? = nil, prefix: [String] = []) throws {
        process.executableURL = executable ?? Self.binary
        process.arguments = prefix + arguments
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        stdoutPipe.fileHandleForReading.readabilityHandler = { [weak self] h in self?.take(h.availableData) }
        stderrPipe.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            self?.lock.withLock { self?.errText += String(decoding: d, as: UTF8.self) }
        }
        try process.run()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }

    private func take(_ data: Data) {
        lock.withLock {
            outText += String(decoding: data, as: UTF8.self)
            partial.append(data)
            while let nl = partial.firstIndex(of: 0x0A) {
                let line = partial[partial.startIndex..<nl]
                partial = Data(partial[(nl + 1)...])
                if var obj = try? JSONSerialization.jsonObject(with: line) as? [String: Any] {
                    // When it came (seconds since the reference date): how long apart two events were.
                    obj["_at"] = Date().timeIntervalSinceReferenceDate
                    lines.append(obj)
                }
            }
        }
    }

    var events: [[String: Any]] { lock.withLock { lines } }
    var stderr: String { lock.withLock { errText } }
    /// Everything it printed on stdout (a console without --json reads as text).
    var stdout: String { lock.withLock { outText } }

    /// Waits until stdout contains `text`.
    func waitForText(_ text: String, timeout: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stdout.contains(text) { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }

    /// Waits for the first event named `name` satisfying `match` (among
    /// those printed after the first `after` events).
    func waitFor(_ name: String, after: Int = 0, timeout: Double = 30, where match: ([String: Any]) -> Bool = { _ in true }) -> [String: Any]? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let e = events.dropFirst(after).first(where: { $0["event"] as? String == name && match($0) }) { return e }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    /// Raw bytes on the process's stdin (a media source reading `-`).
    /// (A process that already exited makes it a recorded failure, not a crash of the whole test run.)
    func write(_ data: Data) {
        do { try stdinPipe.fileHandleForWriting.write(contentsOf: data) } catch {
            Issue.record("cannot write to the node's stdin (exited? status \(process.isRunning ? "running" : String(process.terminationStatus))): \(error); stderr: \(stderr)")
        }
    }

    func closeStdin() {
        try? stdinPipe.fileHandleForWriting.close()
    }

    func send(_ line: String) {
        write(Data((line + "\n").utf8))
    }

    func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    /// Waits for exit; returns the status, or nil on timeout (then kills it).
    func waitExit(timeout: Double = 20) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            process.terminate()
            // (Not every program stops on SIGTERM: gst-launch-1.0 outlived
            // the test run, one per run, until killed.)
            let grace = Date().addingTimeInterval(1)
            while process.isRunning && Date() < grace { Thread.sleep(forTimeInterval: 0.02) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            return nil
        }
        // Let the pipe handlers drain what the process wrote last.
        Thread.sleep(forTimeInterval: 0.1)
        return process.terminationStatus
    }
}

/// Runs the binary to completion and returns (status, stdout, stderr).
func runToEnd(_ arguments: [String], timeout: Double = 20) throws -> (Int32, String, String) {
    let p = Process()
    p.executableURL = NodeProcess.binary
    p.arguments = arguments
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    // Read while it runs: output beyond a pipe's 64 KiB (the help dump) would
    // otherwise block the process until the timeout.
    let collected = OutputBox()
    let group = DispatchGroup()
    for (handle, isErr) in [(out.fileHandleForReading, false), (err.fileHandleForReading, true)] {
        DispatchQueue.global().async(group: group) {
            let data = handle.readDataToEndOfFile()
            collected.set(data, isErr: isErr)
        }
    }
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
    if p.isRunning { p.terminate() }
    p.waitUntilExit()
    group.wait()
    return (p.terminationStatus, String(decoding: collected.out, as: UTF8.self), String(decoding: collected.err, as: UTF8.self))
}

/// The two outputs of `runToEnd`, filled by their readers.
private final class OutputBox: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var out = Data()
    private(set) var err = Data()

    func set(_ data: Data, isErr: Bool) {
        lock.withLock { if isErr { err = data } else { out = data } }
    }
}

/// `name` in a directory of $PATH, or nil.
func executableOnPath(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
        let path = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

func temporaryDirectory() -> String {
    let dir = NSTemporaryDirectory() + "lvbnode-e2e-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

/// Writes one second (30 pictures) of a solid colour, BT.601 (Y, U, V), as a Y4M file a host can loop.
func writeSolidY4M(_ path: String, width: Int, height: Int, colour: (UInt8, UInt8, UInt8)) throws {
    var frame = try I420Frame(width: width, height: height)
    frame.y = [UInt8](repeating: colour.0, count: frame.y.count)
    frame.u = [UInt8](repeating: colour.1, count: frame.u.count)
    frame.v = [UInt8](repeating: colour.2, count: frame.v.count)
    let video = try Y4MWriter(path: path, width: width, height: height, fps: 30)
    for _ in 0..<30 { try video.write(frame) }
    video.close()
}

extension Array where Element == NodeProcess {
    /// Asks every node for `/stats` at once and collects the answers: one
    /// snapshot of the room, each node's own view within a few milliseconds.
    func snapshot(timeout: Double = 5) -> [[String: Any]?] {
        let before = map { $0.events.count }
        for p in self { p.send("/stats") }
        return zip(self, before).map { p, n in
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let answer = p.events.dropFirst(n).first(where: { $0["event"] as? String == "stats" && $0["transport"] != nil }) {
                    return answer
                }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return nil
        }
    }
}
