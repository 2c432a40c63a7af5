import LVBMesh
import LVBWeb
import Testing

/// The mesh's model is built from the nodes' JSON lines alone: fed recorded
/// lines, it must place each node in the tree, follow the kill of a relay,
/// and count what each viewer showed.
@Suite struct MeshModelTests {
    private let host = String(repeating: "h", count: 52), v1 = String(repeating: "a", count: 52)
    private let v2 = String(repeating: "b", count: 52), v3 = String(repeating: "c", count: 52)

    private func feed(_ m: MeshModel, _ name: String, _ line: String, at: Double) {
        m.ingest(name, try? JSONValue.parse(Array(line.utf8)), at: at)
    }

    /// A host and three viewers: v1 under the host, v2 and v3 under v1; v1 is killed and both move under the host.
    private func recorded() -> MeshModel {
        let m = MeshModel()
        m.add("host-1", role: .host, room: 0, pid: 10)
        for (i, name) in ["viewer-1", "viewer-2", "viewer-3"].enumerated() { m.add(name, role: .viewer, room: 0, pid: Int32(11 + i)) }
        feed(m, "host-1", #"{"event":"ready","id":"\#(host)","listen":"127.0.0.1:1","room":"r"}"#, at: 0.1)
        for (name, id) in [("viewer-1", v1), ("viewer-2", v2), ("viewer-3", v3)] {
            feed(m, name, #"{"event":"ready","id":"\#(id)","listen":"127.0.0.1:2"}"#, at: 0.2)
            feed(m, name, #"{"event":"admitted","room":"r"}"#, at: 0.5)
            feed(m, name, #"{"event":"first_frame","ms":120.5}"#, at: 0.6)
        }
        feed(m, "viewer-1", #"{"event":"tree","parent":"\#(host)","depth":1,"failovers":0}"#, at: 0.7)
        feed(m, "viewer-2", #"{"event":"tree","parent":"\#(v1)","depth":2,"failovers":0}"#, at: 0.8)
        feed(m, "viewer-3", #"{"event":"tree","parent":"\#(v1)","depth":2,"failovers":0}"#, at: 0.8)
        m.sent("hello #1 from viewer-2", kind: "chat", by: "viewer-2", room: 0, at: 1)
        for name in ["host-1", "viewer-1", "viewer-3"] {
            feed(m, name, #"{"event":"chat","id":"\#(v2)","nick":"viewer-2","text":"hello #1 from viewer-2"}"#, at: 1.1)
        }
        feed(m, "viewer-2", #"{"event":"stats","media":{"role":"viewer","fps":30,"video_packets":100,"video_lost":0,"recovered":0,"video_latency_p95_ms":9.5}}"#, at: 2)
        feed(m, "viewer-2", #"{"event":"stats","media":{"role":"viewer","fps":29.5,"video_packets":200,"video_lost":10,"recovered":8,"video_latency_p95_ms":11}}"#, at: 4)
        m.killing("viewer-1", at: 5)
        m.exited("viewer-1", status: 137, at: 5.01)
        feed(m, "viewer-2", #"{"event":"tree","parent":null,"depth":null,"failovers":0}"#, at: 5.5)
        feed(m, "viewer-2", #"{"event":"tree","parent":"\#(host)","depth":1,"failovers":1}"#, at: 6.2)
        feed(m, "viewer-3", #"{"event":"tree","parent":"\#(host)","depth":1,"failovers":1}"#, at: 6.5)
        m.sent("bullet #2 from viewer-3", kind: "danmaku", by: "viewer-3", room: 0, at: 7)
        feed(m, "viewer-2", #"{"event":"danmaku","nick":"viewer-3","text":"bullet #2 from viewer-3"}"#, at: 7.1)
        feed(m, "host-1", #"{"event":"like","nick":"viewer-2","count":3,"total":7}"#, at: 7.2)
        for (name, frames, skipped) in [("viewer-2", 590, 10), ("viewer-3", 600, 0)] {
            feed(m, name, #"{"event":"exit","reason":"terminated","media":{"role":"viewer","frames":\#(frames),"skipped_frames":\#(skipped),"video_latency_p50_ms":5,"video_latency_p95_ms":9},"tree":{"depth":1}}"#, at: 10)
        }
        return m
    }

    @Test func theTreeTheKillAndTheRepairAreReadFromTheLines() {
        let m = recorded()
        #expect(m.nodes["viewer-2"]?.parent == host && m.nodes["viewer-2"]?.depth == 1)
        #expect(m.kill?.children == ["viewer-2", "viewer-3"])
        #expect(abs((m.kill?.recovered["viewer-2"] ?? 0) - 1.2) < 1e-9)
        #expect(abs((m.kill?.recovered["viewer-3"] ?? 0) - 1.5) < 1e-9)
        // 100 packets, 8 of them repairs: 92 originals came, 10 were lost on the way.
        #expect(abs((m.nodes["viewer-2"]?.loss ?? 0) - 10.0 / 102.0) < 1e-9)
        #expect(m.nodes["viewer-2"]?.repaired == 8)
        #expect(m.likes[0] == 7)
        #expect(m.happenings.contains { $0.text.contains("viewer-2 recovered under host-1") })
    }

    @Test func theSummaryCountsFramesEventsAndRepairs() {
        let s = MeshSummary(recorded())
        #expect(s.viewers.map(\.name) == ["viewer-2", "viewer-3"], "the killed relay is left out")
        #expect(s.framesShown == 1190 && s.framesSkipped == 10)
        // viewer-3 saw the chat but not the bullet comment it sent itself (not expected);
        // viewer-2 saw the bullet comment; the host saw the chat but not the bullet comment.
        #expect(s.eventsExpected == 4 && s.eventsSeen == 3)
        #expect(s.childrenRecovered)
        #expect(s.depths.map(\.depth) == [1] && s.depths.map(\.viewers) == [2])
        #expect(s.depths.first?.p50 == 5 && s.depths.first?.p95 == 9)
        #expect(s.firstFrameMs == [120.5, 120.5])
        let json = MeshDashboard.summaryJSON(s)
        let parsed = try? JSONValue.parse(Array(json.utf8))
        #expect(parsed?["event"]?.string == "summary")
        #expect(parsed?["events_seen"]?.number == 3)
        #expect(parsed?["children_recovered"]?.bool == true)
    }

    @Test func eachViewersLinkToItsParentIsReadFromItsStatsAndNamesTheRelay() {
        let m = MeshModel()
        m.add("rendezvous", role: .rendezvous, room: nil, pid: 9)
        m.add("host-1", role: .host, room: 0, pid: 10)
        m.add("viewer-1", role: .viewer, room: 0, pid: 11)
        m.add("viewer-2", role: .viewer, room: 0, pid: 12)
        let rv = String(repeating: "r", count: 52)
        feed(m, "rendezvous", #"{"event":"ready","id":"\#(rv)","listen":"x"}"#, at: 0)
        for (name, id) in [("host-1", host), ("viewer-1", v1), ("viewer-2", v2)] {
            feed(m, name, #"{"event":"ready","id":"\#(id)","listen":"x"}"#, at: 0)
        }
        feed(m, "viewer-1", #"{"event":"stats","tree":{"parent":"\#(host)","parent_path":"direct","depth":1},"sessions":{"direct":3,"relayed":0}}"#, at: 2)
        feed(m, "viewer-2", #"{"event":"stats","tree":{"parent":"\#(v1)","parent_path":"relay via \#(rv)","depth":2},"sessions":{"direct":1,"relayed":2}}"#, at: 2)
        #expect(m.link(of: m.nodes["viewer-1"]!) == "direct")
        #expect(m.link(of: m.nodes["viewer-2"]!) == "relay via rendezvous")
        #expect(m.link(of: m.nodes["host-1"]!) == nil, "the host has no parent")
        var config = MeshConfig(executable: "/bin/true")
        config.viewers = 2
        config.guests = 0
        let drawn = MeshDashboard.render(m, config: config, now: 3, width: 140).joined(separator: "\n")
        #expect(drawn.contains("relay via rendezvous"), "\(drawn)")
        m.stopping()
        // Leaving, the nodes' last stats say less: the counts as the mesh ran stand.
        feed(m, "viewer-2", #"{"event":"stats","tree":{"parent":null,"depth":null},"sessions":{"direct":0,"relayed":0}}"#, at: 3)
        let s = MeshSummary(m)
        #expect(s.treeLinksDirect == 1 && s.treeLinksRelayed == 1)
        #expect(s.sessionsDirect == 4 && s.sessionsRelayed == 2)
        #expect(s.text.contains { $0.contains("tree: 1 direct, 1 relayed") }, "\(s.text)")
    }

    @Test func theDashboardDrawsTheTreeBelowTheHost() {
        let m = MeshModel()
        m.add("host-1", role: .host, room: 0, pid: 10)
        m.add("viewer-1", role: .viewer, room: 0, pid: 11)
        m.add("viewer-2", role: .viewer, room: 0, pid: 12)
        feed(m, "host-1", #"{"event":"ready","id":"\#(host)","listen":"x"}"#, at: 0)
        feed(m, "viewer-1", #"{"event":"ready","id":"\#(v1)","listen":"x"}"#, at: 0)
        feed(m, "viewer-2", #"{"event":"ready","id":"\#(v2)","listen":"x"}"#, at: 0)
        feed(m, "viewer-1", #"{"event":"tree","parent":"\#(host)","depth":1,"failovers":0}"#, at: 1)
        feed(m, "viewer-2", #"{"event":"tree","parent":"\#(v1)","depth":2,"failovers":0}"#, at: 1)
        var config = MeshConfig(executable: "/bin/true")
        config.viewers = 2
        config.guests = 0
        let lines = MeshDashboard.render(m, config: config, now: 3, width: 120)
        let host = lines.firstIndex { $0.hasPrefix("  host-1") }, one = lines.firstIndex { $0.contains("└─ viewer-1") }
        let two = lines.firstIndex { $0.contains("   └─ viewer-2") }
        #expect(host != nil && one != nil && two != nil, "\(lines.joined(separator: "\n"))")
        if let host, let one, let two { #expect(host < one && one < two) }
    }

    @Test func linesThatAreNotJSONAreCountedAndChangeNothing() {
        let m = MeshModel()
        m.add("viewer-1", role: .viewer, room: 0, pid: 1)
        feed(m, "viewer-1", "lvbnode: warning: something", at: 0)
        feed(m, "viewer-1", #"{"no":"event"}"#, at: 0)
        feed(m, "nobody", #"{"event":"admitted"}"#, at: 0)
        #expect(m.unreadable == 2)
        #expect(m.nodes["viewer-1"]?.admitted == nil)
    }
}
