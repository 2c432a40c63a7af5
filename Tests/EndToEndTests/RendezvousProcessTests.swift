import Foundation
import Testing

/// A rendezvous and two hosts as processes on loopback: the room list, a
/// join by room id, a killed host leaving the list, and STUN on the port.
@Suite(.serialized, .ownThread) struct RendezvousProcessTests {
    private func rendezvous() throws -> (NodeProcess, String) {
        let rv = try NodeProcess(["rendezvous", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
        let listen = try #require(rv.waitFor("ready")?["listen"] as? String, "rendezvous never became ready: \(rv.stderr)")
        return (rv, listen)
    }

    private func host(_ title: String, via rv: String) throws -> (NodeProcess, room: String, id: String) {
        let h = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--title", title, "--nick", "h-\(title)",
                                 "--video", "none", "--audio", "none", "--rendezvous", rv])
        let ready = try #require(h.waitFor("ready"), "host never became ready: \(h.stderr)")
        return (h, try #require(ready["room"] as? String), try #require(ready["id"] as? String))
    }

    /// `lvbnode rooms --json`: the room lines, and the summary line.
    private func rooms(_ rv: String) throws -> ([[String: Any]], [String: Any]?) {
        let (status, out, err) = try runToEnd(["rooms", "--rendezvous", rv, "--json"])
        #expect(status == 0, "\(err)")
        let lines = out.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        return (lines.filter { $0["event"] as? String == "room" }, lines.first { $0["event"] as? String == "rooms" })
    }

    @Test func roomsAreListedJoinedByIDAndAKilledHostLeavesTheList() throws {
        let (rv, address) = try rendezvous()
        defer { rv.signal(SIGTERM); _ = rv.waitExit() }
        let (a, roomA, idA) = try host("alpha", via: address)
        let (b, roomB, _) = try host("beta", via: address)
        defer { b.signal(SIGTERM); _ = b.waitExit() }
        // A viewer in room b, joined by its room id through the rendezvous
        // (once b's first announcement is there: `ready` comes before it).
        for _ in 0..<25 where try !rooms(address).0.contains(where: { $0["id"] as? String == roomB }) {
            Thread.sleep(forTimeInterval: 0.2)
        }
        let viewer = try NodeProcess(["join", roomB, "--rendezvous", address, "--ephemeral", "--json", "--no-media"])
        defer { viewer.signal(SIGTERM); _ = viewer.waitExit() }
        #expect(viewer.waitFor("admitted", where: { $0["room"] as? String == roomB }) != nil, "\(viewer.stderr)")

        // Hosts announce every 10 s: within one interval the list shows the viewer.
        var listed: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            listed = try rooms(address).0
            if listed.count == 2, listed.first?["viewers"] as? Int == 1 { break }
            Thread.sleep(forTimeInterval: 0.5)
        }
        #expect(listed.map { $0["id"] as? String } == [roomB, roomA], "\(listed)")
        #expect(listed.map { $0["viewers"] as? Int } == [1, 0])
        #expect(listed.map { $0["title"] as? String } == ["beta", "alpha"])
        #expect(try rooms(address).1?["total"] as? Int == 2)
        // The viewer browses from inside its room: /rooms asks the rendezvous over its own session.
        viewer.send("/rooms")
        let summary = viewer.waitFor("rooms", timeout: 5)
        #expect(summary?["total"] as? Int == 2 && summary?["page"] as? Int == 1, "\(String(describing: summary)) \(viewer.stderr)")
        #expect(Set(viewer.events.filter { $0["event"] as? String == "room" }.compactMap { $0["id"] as? String }) == [roomA, roomB])

        // Joining room a by its id reaches host a (IK with the announced key).
        let (status, out, err) = try runToEnd(["join", roomA, "--rendezvous", address, "--ephemeral", "--json", "--no-media", "--duration", "3"])
        #expect(status == 0, "\(err)")
        #expect(out.contains("\"event\":\"admitted\"") && out.contains(idA), "\(out)")
        // An unknown room id: one line, status 1.
        let (unknown, _, why) = try runToEnd(["join", "aaaaaaaaaaaaaaaaaaaaaaaaaa", "--rendezvous", address, "--ephemeral"])
        #expect(unknown == 1 && why.contains("neither a live room nor a replay the rendezvous lists"), "\(why)")

        // Host a dies without a word: gone from the list within 30 s of its last announcement.
        a.signal(SIGKILL)
        _ = a.waitExit()
        let killedAt = Date()
        var gone = false
        while Date().timeIntervalSince(killedAt) < 42 {
            if try rooms(address).0.allSatisfy({ $0["id"] as? String != roomA }) { gone = true; break }
            Thread.sleep(forTimeInterval: 1)
        }
        #expect(gone, "room a still listed \(Int(Date().timeIntervalSince(killedAt))) s after its host was killed")
        // Both joins by room id asked for an introduction, and both hosts were told.
        rv.signal(SIGTERM)
        #expect(rv.waitExit() == 0)
        let counters = try #require(rv.waitFor("exit", timeout: 1)?["rendezvous"] as? [String: Any])
        #expect(counters["introduce_requests"] as? Int ?? 0 >= 2 && counters["introductions"] as? Int ?? 0 >= 2, "\(counters)")
    }

    @Test func aHostThatQuitsLeavesTheListAtOnceAndTheRendezvousAnswersSTUN() throws {
        let (rv, address) = try rendezvous()
        defer { rv.signal(SIGTERM); _ = rv.waitExit() }
        let (h, room, _) = try host("gamma", via: address)
        var listed = false
        for _ in 0..<20 where !listed {
            listed = try rooms(address).0.contains { $0["id"] as? String == room }
            if !listed { Thread.sleep(forTimeInterval: 0.2) }
        }
        #expect(listed)
        h.send("/quit")
        #expect(h.waitExit() == 0)
        #expect(try rooms(address).0.isEmpty)

        // A password room is listed as one; joined by its id, the password is asked for and proved.
        let locked = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--password", "s3cret",
                                      "--video", "none", "--audio", "none", "--rendezvous", address])
        defer { locked.signal(SIGTERM); _ = locked.waitExit() }
        let lockedRoom = try #require(locked.waitFor("ready")?["room"] as? String)
        var entry: [String: Any]?
        for _ in 0..<20 where entry == nil {
            entry = try rooms(address).0.first { $0["id"] as? String == lockedRoom }
            if entry == nil { Thread.sleep(forTimeInterval: 0.2) }
        }
        #expect(entry?["access"] as? String == "password")
        let (refused, _, asked) = try runToEnd(["join", lockedRoom, "--rendezvous", address, "--ephemeral"])
        #expect(refused == 64 && asked.contains("--password"), "\(asked)")
        let (ok, joined, err) = try runToEnd(["join", lockedRoom, "--rendezvous", address, "--password", "s3cret", "--ephemeral",
                                              "--json", "--no-media", "--duration", "3"])
        #expect(ok == 0 && joined.contains("\"event\":\"admitted\""), "\(err)")

        // RFC 5769's sample request, from a plain UDP socket: a Binding
        // success carrying our own address (XOR-MAPPED-ADDRESS).
        let port = try #require(UInt16(address.split(separator: ":").last ?? ""))
        let probe = try UDPProbe()
        let request: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + Array(1...12)
        probe.send(request, toPort: port)
        let answer = try #require(probe.receive(timeout: 2))
        #expect(answer.count <= 3 * request.count)
        #expect(Array(answer[0..<2]) == [0x01, 0x01] && Array(answer[8..<20]) == Array(request[8..<20]))
        #expect(Array(answer[20..<22]) == [0x00, 0x20])  // XOR-MAPPED-ADDRESS first

        // A stock STUN client, where one is installed (coturn's).
        let stock = "/usr/bin/turnutils_stunclient"
        if FileManager.default.isExecutableFile(atPath: stock) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: stock)
            p.arguments = ["-p", "\(port)", "127.0.0.1"]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            try p.run()
            p.waitUntilExit()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(text.contains("reflexive addr: 127.0.0.1:"), "\(text)")
        }

        // A host asking a STUN server (this one's port) with --stun learns the
        // address it sees it at: its own listening address here, on loopback.
        let asker = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--video", "none", "--audio", "none",
                                     "--stun", address])
        defer { asker.signal(SIGTERM); _ = asker.waitExit() }
        let listen = try #require(asker.waitFor("ready")?["listen"] as? String)
        let seen = asker.waitFor("reflexive", timeout: 5)
        #expect(seen?["address"] as? String == listen && seen?["via"] as? String == address, "\(String(describing: seen)) \(asker.stderr)")
        let (bad, _, why) = try runToEnd(["host", "--ephemeral", "--stun", "stun.example.org:3478"])
        #expect(bad == 64 && why.contains("--stun"), "\(why)")
    }
}
