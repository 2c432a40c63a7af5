#if canImport(Glibc)
import Glibc
#endif

// What the presence bench asks each member and reads from what it prints:
// `/stats` (transport bytes in) and `/viewers` (the room's count), each
// answered with one NDJSON line.
enum PresenceProbes {
    private typealias M = MediaBench

    /// Sends `command` to each member and reads `value` from the first
    /// `event` line each prints after it; throws when one stays silent 10 s.
    static func ask(_ members: [ChildProcess], _ inputs: [Int32], _ command: String, event: String,
                    _ value: (Substring) -> Double?) throws -> [Double] {
        let marks = members.map { $0.lines().count }
        for fd in inputs { MixStage.send(command, to: fd) }
        let deadline = ProcessRunner.now() + 10
        var found = [Double?](repeating: nil, count: members.count)
        while found.contains(where: { $0 == nil }) {
            for (i, m) in members.enumerated() where found[i] == nil {
                for line in m.lines().dropFirst(marks[i]) where M.isEvent(line, event) {
                    if let v = value(line[...]) {
                        found[i] = v
                        break
                    }
                }
            }
            guard ProcessRunner.now() < deadline else {
                throw TextError("\(found.filter { $0 == nil }.count) of \(members.count) members did not answer \(command) within 10 s")
            }
            ProcessRunner.sleep(0.05)
        }
        return found.compactMap { $0 }
    }

    static func bytesIn(_ members: [ChildProcess], _ inputs: [Int32]) throws -> [Double] {
        try ask(members, inputs, "/stats", event: "stats") { M.jsonNumber(M.section($0, "transport"), "bytes_in") }
    }

    static func counts(_ members: [ChildProcess], _ inputs: [Int32]) throws -> [Double] {
        try ask(members, inputs, "/viewers", event: "viewers") { M.jsonNumber($0, "count") }
    }

    /// Bytes in per second and CPU (% of one core) of each member over `seconds`, while `during` runs.
    static func usage(_ members: [ChildProcess], _ inputs: [Int32], seconds: Double,
                      during: (Double) -> Void = { ProcessRunner.sleep($0) }) throws -> (bytes: [Double], cpu: [Double]) {
        let before = try bytesIn(members, inputs)
        let c0 = members.map { $0.cpuSeconds() }, t0 = ProcessRunner.now()
        during(seconds)
        let c1 = members.map { $0.cpuSeconds() }, t1 = ProcessRunner.now()
        let after = try bytesIn(members, inputs)
        let span = t1 - t0
        let cpu = zip(c0, c1).compactMap { a, b in a.flatMap { a in b.map { ($0 - a) / span * 100 } } }
        return (zip(before, after).map { ($1 - $0) / span }, cpu)
    }

    /// The chat lines `member` printed from line `from` on: text → (author's timestamp, arrival), wall-clock ms.
    static func chats(_ member: ChildProcess, from: Int, prefix: String) -> [String: (sent: Double, arrived: Double)] {
        var out: [String: (Double, Double)] = [:]
        for (at, line) in member.stampedLines(from: from) where M.isEvent(line, "chat") {
            guard let text = M.jsonString(line[...], "text"), text.hasPrefix(prefix), let time = M.jsonNumber(line[...], "time") else { continue }
            if out[text] == nil { out[text] = (time, at) }
        }
        return out
    }

    /// The value at fraction `p` of the sorted `values`.
    static func percentile(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }
}
