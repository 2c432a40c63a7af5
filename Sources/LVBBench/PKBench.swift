import LVBMedia

#if canImport(Glibc)
import Glibc
#endif

// A PK between two rooms (`LVBBench <seconds> pk`), the release binary as
// processes on loopback: a rendezvous, hosts A and B (640x360, the synthetic
// pattern with its capture-time strip) announcing to it, and a viewer of each
// room writing what it decodes as Y4M to a pipe we read (--video-out -).
// In each of `cycles` PKs, A asks (/pk ROOM-ID) and B accepts (/pk accept):
//   accept → both hosts seen: from B's /pk accept to the first picture at each
//     viewer whose halves both carry a capture time (its own host left, the
//     other right), the PK's join-to-first-frame;
//   glass-to-glass, per half: A the time we read a picture, L and R the
//     capture times in its left (own host) and right (other host) halves:
//     own host A − L, other host A − R (the other host's encode of its half,
//     the hop between hosts, this host's decode, mix and encode, the viewer);
//   host CPU: each host's CPU time over the PK's middle `watch` seconds.
// Then, same run, a link-mic host (640x360) with one guest on stage and a
// viewer, its CPU over the same span: the PK's cost against one guest's.

enum PKBench {
    static let width = 640, height = 360, cycles = 4
    static let goalOtherHostP95 = 100.0, goalCPURatio = 1.1

    /// One viewer's pipe of pictures and what was read from it.
    final class Reader {
        let fd: Int32
        var buffer: [UInt8] = []
        var header: (width: Int, height: Int)?
        var own: [Double] = [], other: [Double] = []
        /// Wall ms of the latest picture with both halves readable.
        var lastBoth: Double?
        var pictures = 0

        init(_ fd: Int32) { self.fd = fd }

        /// Takes what the pipe has; pictures after `since` (wall ms) count.
        func take(_ chunk: ArraySlice<UInt8>, at arrived: Double, counting: Bool) throws {
            buffer += chunk
            if header == nil {
                guard let newline = buffer.firstIndex(of: 10) else { return }
                header = try MixStage.parseHeader(buffer[..<newline])
                buffer.removeFirst(newline + 1)
            }
            guard let (w, h) = header else { return }
            let frameBytes = 6 + w * h * 3 / 2
            while buffer.count >= frameBytes {
                defer { buffer.removeFirst(frameBytes) }
                guard var picture = try? I420Frame(width: w, height: h) else { continue }
                picture.y.withUnsafeMutableBufferPointer { out in
                    buffer.withUnsafeBufferPointer { src in out.baseAddress!.update(from: src.baseAddress! + 6, count: w * h) }
                }
                pictures += 1
                let half = (w / 2) & ~1
                guard let left = SyntheticVideo.readCaptureMilliseconds(picture, x: 0, span: half),
                      let right = SyntheticVideo.readCaptureMilliseconds(picture, x: half, span: half) else { continue }
                lastBoth = arrived
                guard counting else { continue }
                let now = Int(arrived) & 0xFFFF
                own.append(Double((now - left) & 0xFFFF))
                other.append(Double((now - right) & 0xFFFF))
            }
        }
    }

    static func runAndPrint(seconds: Double) {
        let watch = min(10, max(3, seconds))
        MediaBench.say("")
        MediaBench.say("PK: lvbnode as processes on loopback UDP (a rendezvous, hosts A and B at \(width)x\(height), a viewer of each "
                       + "room with --video-out - read by us); \(cycles) PKs (A: /pk ROOM-ID, B: /pk accept), each watched for "
                       + "\(MixStage.fixed(watch, 0)) s, then /pk end")
        guard let binary = MediaBench.locateBinary() else {
            MediaBench.say("  lvbnode binary not found: set LVBNODE_BIN to it (Scripts/bench builds .build/release/lvbnode)")
            return
        }
        let dir: String
        switch ProcessRunner.makeTemporaryDirectory("lvbbench-pk") {
        case .success(let path): dir = path
        case .failure(let error): MediaBench.say("  \(error)"); return
        }
        defer { MediaBench.removeDirectory(dir) }
        signal(SIGPIPE, SIG_IGN)
        do {
            let pk = try measurePK(binary, dir, watch: watch)
            let linkMic = try measureLinkMic(binary, dir, watch: watch)
            report(pk, linkMicCPU: linkMic)
        } catch {
            MediaBench.say("  FAILED: \(error)")
        }
    }

    struct PKRun {
        var accepted: [Double] = []
        var own: [Double] = [], other: [Double] = []
        var cpu: [Double] = []
        var pictures = 0
    }

    static func report(_ r: PKRun, linkMicCPU: Double) {
        let joined = MixStage.pair(r.accepted)
        MediaBench.row("accept → both hosts seen p50 / p95", joined.text, note: "\(r.accepted.count) viewer pictures, one per viewer per PK")
        let other = MixStage.pair(r.other)
        MediaBench.row("other host → viewer p50 / p95", other.text, goal: "p95 ≤ \(MixStage.fixed(goalOtherHostP95, 0)) ms",
                       ok: other.p95 <= goalOtherHostP95)
        MediaBench.row("own host → viewer p50 / p95", MixStage.pair(r.own).text, note: "the same pictures' left halves")
        let cpu = r.cpu.isEmpty ? 0 : r.cpu.reduce(0, +) / Double(r.cpu.count)
        MediaBench.row("host CPU in a PK", MixStage.fixed(cpu * 100, 1) + " % of a core", note: "mean of both hosts over every PK")
        MediaBench.row("host CPU, link-mic with 1 guest (reference)", MixStage.fixed(linkMicCPU * 100, 1) + " % of a core")
        let ratio = linkMicCPU > 0 ? cpu / linkMicCPU : .infinity
        MediaBench.row("PK / link-mic", MixStage.fixed(ratio, 2) + "×", goal: "≤ \(MixStage.fixed(goalCPURatio, 1))×", ok: ratio <= goalCPURatio)
        MediaBench.say("    \(r.pictures) pictures read")
    }

    // MARK: - The PK

    static func measurePK(_ binary: String, _ dir: String, watch: Double) throws -> PKRun {
        let rv = try ChildProcess(binary, ["rendezvous", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
        defer { rv.terminate() }
        guard let ready = rv.waitForLine(timeout: 10, { MediaBench.isEvent($0, "ready") }),
              let address = MediaBench.jsonString(ready[...], "listen") else { throw TextError("the rendezvous printed no ready event") }
        func host(_ name: String) throws -> (ChildProcess, Int32, String) {
            let (p, input) = try MixStage.startWithInput(binary, ["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--title", name,
                                                                  "--size", "\(width)x\(height)", "--rendezvous", address],
                                                         log: "\(dir)/\(name).err", stdout: .lines)
            guard let ready = p.waitForLine(timeout: 10, { MediaBench.isEvent($0, "ready") }),
                  let room = MediaBench.jsonString(ready[...], "room") else {
                throw TextError("host \(name) printed no ready event" + MediaBench.exitNote(p, "\(dir)/\(name).err"))
            }
            return (p, input, room)
        }
        let (a, aIn, roomA) = try host("A")
        defer { close(aIn); a.terminate() }
        let (b, bIn, roomB) = try host("B")
        defer { close(bIn); b.terminate() }
        ProcessRunner.sleep(1.5)  // both announced
        var viewers: [(ChildProcess, Reader)] = []
        defer { for (v, r) in viewers { v.terminate(); close(r.fd) } }
        for (name, room) in [("va", roomA), ("vb", roomB)] {
            guard let fds = ProcessRunner.makePipe() else { throw TextError("pipe: " + String(cString: strerror(errno))) }
            let v: ChildProcess
            do {
                v = try ChildProcess(binary, ["join", room, "--rendezvous", address, "--ephemeral", "--json", "--video-out", "-"],
                                     stdout: .descriptor(fds[1]), stderr: .file("\(dir)/\(name).err"))
            } catch {
                close(fds[0]); close(fds[1])
                throw error
            }
            close(fds[1])
            viewers.append((v, Reader(fds[0])))
        }
        let readers = viewers.map(\.1)
        pump(readers, seconds: 3, counting: false)
        guard readers.allSatisfy({ $0.pictures > 0 }) else { throw TextError("a viewer wrote no pictures in 3 s") }

        var run = PKRun()
        for _ in 1...cycles {
            let requests = b.lines().count
            MixStage.send("/pk \(roomB) 5", to: aIn)
            var asked = false
            let deadline = ProcessRunner.now() + 10
            while !asked && ProcessRunner.now() < deadline {
                pump(readers, seconds: 0.05, counting: false)
                asked = b.lines().dropFirst(requests).contains { MediaBench.isEvent($0, "pk_request") }
            }
            guard asked else { throw TextError("B printed no pk_request within 10 s of A's /pk" + MediaBench.exitNote(b, "\(dir)/B.err")) }
            for r in readers { r.lastBoth = nil }
            let accepted = ProcessRunner.wallMilliseconds()
            MixStage.send("/pk accept", to: bIn)
            let seenBy = ProcessRunner.now() + 10
            while readers.contains(where: { $0.lastBoth == nil }) && ProcessRunner.now() < seenBy {
                pump(readers, seconds: 0.02, counting: false)
            }
            for r in readers { if let t = r.lastBoth { run.accepted.append(t - accepted) } }
            pump(readers, seconds: 1, counting: false)
            let cpuBefore = [a.cpuSeconds(), b.cpuSeconds()]
            let started = ProcessRunner.now()
            pump(readers, seconds: watch, counting: true)
            let span = ProcessRunner.now() - started
            for (before, p) in zip(cpuBefore, [a, b]) {
                if let before, let after = p.cpuSeconds() { run.cpu.append((after - before) / span) }
            }
            MixStage.send("/pk end", to: aIn)
            pump(readers, seconds: 3, counting: false)
        }
        run.own = readers.flatMap(\.own)
        run.other = readers.flatMap(\.other)
        run.pictures = readers.reduce(0) { $0 + $1.pictures }
        return run
    }

    /// Reads both viewers' pipes for `seconds`.
    static func pump(_ readers: [Reader], seconds: Double, counting: Bool) {
        let end = ProcessRunner.now() + seconds
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        repeat {
            var fds = readers.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let wait = Int32(max(1, min(20, (end - ProcessRunner.now()) * 1000)))
            guard poll(&fds, nfds_t(fds.count), wait) > 0 else { continue }
            for (i, p) in fds.enumerated() where p.revents & Int16(POLLIN) != 0 {
                let n = chunk.withUnsafeMutableBytes { Glibc.read(p.fd, $0.baseAddress, $0.count) }
                guard n > 0 else { continue }
                try? readers[i].take(chunk[0..<n], at: ProcessRunner.wallMilliseconds(), counting: counting)
            }
        } while ProcessRunner.now() < end
    }

    // MARK: - The link-mic reference

    /// A host's CPU share with one guest on stage and a viewer, over `watch` seconds.
    static func measureLinkMic(_ binary: String, _ dir: String, watch: Double) throws -> Double {
        let (host, hostIn) = try MixStage.startWithInput(binary, ["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json",
                                                                  "--size", "\(width)x\(height)"], log: dir + "/lm-host.err", stdout: .lines)
        defer { close(hostIn); host.terminate() }
        guard let ready = host.waitForLine(timeout: 10, { MediaBench.isEvent($0, "ready") }),
              let ticket = MediaBench.jsonString(ready[...], "ticket") else { throw TextError("link-mic host printed no ready event") }
        let (guest, guestIn) = try MixStage.startWithInput(binary, ["join", ticket, "--ephemeral", "--json"], log: dir + "/lm-guest.err")
        defer { close(guestIn); guest.terminate() }
        let viewer = try ChildProcess(binary, ["join", ticket, "--ephemeral", "--json"], stdout: .null)
        defer { viewer.terminate() }
        guard guest.waitForLine(timeout: 10, { MediaBench.isEvent($0, "first_frame") }) != nil else {
            throw TextError("link-mic guest: no first_frame within 10 s")
        }
        MixStage.send("/linkmic", to: guestIn)
        guard host.waitForLine(timeout: 10, { MediaBench.isEvent($0, "linkmic_request") }) != nil else {
            throw TextError("link-mic host printed no linkmic_request")
        }
        MixStage.send("/accept", to: hostIn)
        guard host.waitForLine(timeout: 10, { MediaBench.isEvent($0, "linkmic_started") }) != nil else {
            throw TextError("link-mic host printed no linkmic_started")
        }
        ProcessRunner.sleep(2)
        guard let before = host.cpuSeconds() else { throw TextError("no CPU time for the link-mic host") }
        let started = ProcessRunner.now()
        ProcessRunner.sleep(watch)
        guard let after = host.cpuSeconds() else { throw TextError("no CPU time for the link-mic host") }
        return (after - before) / (ProcessRunner.now() - started)
    }
}
