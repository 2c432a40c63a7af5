import Glibc
@testable import LVBMesh
import NIOCore
import NIOPosix
import Testing

/// Child processes on the mesh's loop: lines out, a console line in, the
/// exit status reaped, and a kill that ends it.
@Suite(.serialized) struct MeshChildTests {
    final class Lines: @unchecked Sendable {
        var out: [String] = []
        var err: [String] = []
    }

    private func wait(_ loop: EventLoop, until condition: @escaping () -> Bool) async throws -> Bool {
        for _ in 0..<250 {
            if try await loop.submit(condition).get() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test func linesComeOutACommandGoesInAndTheStatusIsReaped() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let lines = Lines()
        let script = #"echo '{"event":"ready"}'; printf 'partial'; printf ' line\n'; echo oops >&2; read x; echo "got $x"; exit 3"#
        let child = try await loop.submit {
            try MeshChild.spawn("sh", executable: "/bin/sh", arguments: ["-c", script], loop: loop,
                                onLine: { lines.out.append(String(buffer: $0)) }, onError: { lines.err.append(String(buffer: $0)) })
        }.get()
        #expect(try await wait(loop) { lines.out.count == 2 })
        try await loop.submit { child.send("/quit") }.get()
        var status: Int32?
        #expect(try await wait(loop) { status = child.poll() ?? status; return status != nil })
        #expect(try await wait(loop) { lines.out.count == 3 })
        try await loop.submit {
            #expect(lines.out == [#"{"event":"ready"}"#, "partial line", "got /quit"])
            #expect(lines.err == ["oops"])
            #expect(status == 3)
            #expect(!child.isRunning)
        }.get()
    }

    @Test func aKilledChildReportsTheSignal() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let child = try await loop.submit {
            try MeshChild.spawn("sleeper", executable: "/bin/sleep", arguments: ["30"], loop: loop, onLine: { _ in }, onError: { _ in })
        }.get()
        try await loop.submit { child.kill() }.get()
        var status: Int32?
        #expect(try await wait(loop) { status = child.poll() ?? status; return status != nil })
        #expect(status == 128 + SIGKILL)
        #expect(Glibc.kill(child.pid, 0) != 0, "reaped: no such process any more")
    }

    @Test func aProgramThatCannotStartSaysWhy() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let result: Result<MeshChild, MeshError> = try await loop.submit {
            do { return .success(try MeshChild.spawn("nothing", executable: "/nonexistent/lvbnode", arguments: [], loop: loop,
                                                      onLine: { _ in }, onError: { _ in })) } catch { return .failure(error as? MeshError ?? .cannotStart("?", "\(error)")) }
        }.get()
        guard case .failure(let error) = result else { Issue.record("started a program that does not exist"); return }
        #expect(error.description.contains("cannot start nothing"))
    }

    /// Issue 47: the mesh exited while two of its nodes still ran. A stop
    /// ends and reaps every child, and a launch due after it (the replay's
    /// player starts a second after its cue) starts nothing.
    @Test func aStoppedMeshLeavesNothingRunningAndStartsNothingMore() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let mesh = MeshRun(config: MeshConfig(executable: "/bin/sh"), loop: loop)
        // sh -c 'exec sleep 30' with the mesh's own arguments as $0, $1…
        _ = try await mesh.launch("sleeper", role: .viewer, room: 0, arguments: ["-c", "exec sleep 30"])
        let pid = try #require(mesh.pids["sleeper"])
        #expect(Glibc.kill(pid, 0) == 0)
        await mesh.stop()
        #expect(await mesh.running.isEmpty)
        #expect(Glibc.kill(pid, 0) != 0, "reaped by the stop: no such process any more")
        await #expect(throws: MeshError.self) {
            _ = try await mesh.launch("player", role: .player, room: 0, arguments: ["-c", "exec sleep 30"])
        }
        #expect(mesh.pids["player"] == nil, "nothing started after the stop")
    }
}
