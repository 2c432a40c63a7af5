import Foundation
import LVBMesh
import Testing

/// Birthday punching behind real NATs (issue 48, variant d): 20 pairs of a
/// viewer behind a hard NAT (`masquerade random,fully-random`) and its
/// room's host behind an ordinary masquerade. Five rooms, each host in its
/// own home with four such viewers, each viewer in its own home (no relay
/// slots: its one parent is the host); the rendezvous relays. The
/// ordinary punch cannot meet a random-port NAT, so each viewer's session
/// with its host starts on the rendezvous's relay; the viewer opens 256
/// spare sockets, the host probes, and the link goes direct. Counts the
/// pairs that met, how long each took, and what share of the viewers'
/// bytes the rendezvous relayed.
@Suite(.serialized, .ownThread, .enabled(if: NATLab.available)) struct NATBirthdayProcessTests {
    static let rooms = 5, viewersPerRoom = 4, fps = 10

    private static func tree(_ stats: [String: Any]?) -> [String: Any]? { stats?["tree"] as? [String: Any] }
    private static func transport(_ stats: [String: Any]?) -> [String: Any]? { stats?["transport"] as? [String: Any] }

    @Test func twentyHardNATViewersMeetTheirHostsDirectly() throws {
        let pairs = Self.rooms * Self.viewersPerRoom
        let hardSites = Set((Self.rooms + 1)...(Self.rooms + pairs))
        let lab = try NATLab(tag: "lvh\(getpid() % 1000)", sites: Self.rooms + pairs, hard: hardSites)
        defer { lab.remove() }
        let rv = try lab.run("rv", ["rendezvous", "--ephemeral", "--listen", "0.0.0.0:7600", "--json", "--relay-kbps", "40000"])
        var all = [rv]
        defer { for p in all { p.signal(SIGTERM); _ = p.waitExit() } }
        guard rv.waitFor("ready") != nil else { Issue.record("rendezvous: \(rv.stderr)"); return }

        var rooms: [(room: String, host: String)] = []
        for site in 1...Self.rooms {
            let host = try lab.run("\(site)", ["host", "--ephemeral", "--listen", "0.0.0.0:7400", "--json", "--rendezvous", lab.rendezvous,
                                               "--size", "160x96", "--fps", "\(Self.fps)", "--bitrate", "100", "--audio", "none",
                                               "--relay-slots", "\(Self.viewersPerRoom)", "--title", "birthday \(site)"])
            all.append(host)
            let ready = try #require(host.waitFor("ready"), "host \(site): \(host.stderr)")
            rooms.append((try #require(ready["room"] as? String), try #require(ready["id"] as? String)))
        }
        Thread.sleep(forTimeInterval: 1)  // the first announcements
        var viewers: [(process: NodeProcess, host: String)] = []
        let hosts = Array(all.dropFirst())
        for (n, site) in hardSites.sorted().enumerated() {
            let (room, host) = rooms[n % Self.rooms]
            let v = try lab.run("\(site)", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json",
                                            "--nick", "v\(site)", "--relay-slots", "0"])
            all.append(v)
            viewers.append((v, host))
            Thread.sleep(forTimeInterval: 0.2)
        }

        // Each viewer's birthday with its host: met, and how long it took.
        var met: [Int] = [], missed: [String] = []
        for (n, v) in viewers.enumerated() {
            #expect(v.process.waitFor("first_frame", timeout: 20) != nil, "viewer \(n) never played: \(v.process.stderr)")
            let event = v.process.waitFor("birthday", timeout: 40) { $0["peer"] as? String == v.host && $0["met"] as? Bool == true }
            if let ms = event?["ms"] as? Int { met.append(ms) } else { missed.append("viewer \(n)") }
        }
        // A miss, told in full: both sides' birthday steps and counters.
        for (n, v) in viewers.enumerated() where missed.contains("viewer \(n)") {
            let viewerID = v.process.waitFor("ready", timeout: 1)?["id"] as? String ?? "?"
            let host = hosts[n % Self.rooms]
            let mine = v.process.events.filter { ["birthday", "nat", "moved", "peer_moved", "link"].contains($0["event"] as? String ?? "") }
            let theirs = host.events.filter {
                ($0["event"] as? String) == "birthday" && ($0["peer"] as? String) == viewerID
                    || ["nat", "moved", "peer_moved"].contains($0["event"] as? String ?? "")
            }
            let before = (v.process.events.count, host.events.count)
            v.process.send("/peers")
            host.send("/peers")
            Thread.sleep(forTimeInterval: 1)
            let peersLines = v.process.events.dropFirst(before.0).filter { ($0["event"] as? String) == "peers" }
                + host.events.dropFirst(before.1).filter { ($0["event"] as? String) == "peers" }
            print("birthday miss, viewer \(n): peers (viewer, host) \(peersLines)")
            // What the two NATs did (their conntrack tables): which outside
            // port the host's probes left from, what the viewer's spares opened.
            let hostSite = n % Self.rooms + 1, viewerSite = hardSites.sorted()[n]
            func conntrack(_ router: Int, matching: String) -> [String] {
                let p = Process()
                p.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
                p.arguments = ["netns", "exec", "\(lab.tag)r\(router)", "cat", "/proc/net/nf_conntrack"]
                let pipe = Pipe()
                p.standardOutput = pipe
                try? p.run()
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                p.waitUntilExit()
                return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init).filter { $0.contains(matching) }
            }
            let atHost = conntrack(hostSite, matching: "dst=\(lab.outside(viewerSite)) ")
            let snatPorts = atHost.compactMap { line -> String? in
                let reply = line.components(separatedBy: "src=\(lab.outside(viewerSite)) ").dropFirst().first
                return reply?.components(separatedBy: "dport=").dropFirst().first?.components(separatedBy: " ").first
            }
            print("birthday miss, viewer \(n): conntrack, host router r r\(hostSite) toward viewer \(lab.outside(viewerSite)): \(atHost.count) entries, reply dports \(Dictionary(grouping: snatPorts, by: { $0 }).mapValues(\.count)); sample \(atHost.prefix(4))")
            let atViewer = conntrack(viewerSite, matching: "dst=\(lab.outside(hostSite)) ")
            print("birthday miss, viewer \(n): conntrack, viewer router r r\(viewerSite) toward host \(lab.outside(hostSite)): \(atViewer.count) entries; sample \(atViewer.prefix(6))")
            let counters = { (p: NodeProcess) in
                (Self.transport([p].snapshot()[0]) ?? [:]).filter { $0.key.hasPrefix("birthday") || $0.key.hasPrefix("member") }
            }
            print("birthday miss, viewer \(n) (\(viewerID)): its events \(mine), its counters \(counters(v.process)); "
                  + "its host's events for it \(theirs), the host's counters \(counters(host))")
        }
        Thread.sleep(forTimeInterval: 2)
        let stats = viewers.map(\.process).snapshot()
        let links = stats.map { Self.tree($0)?["parent_link"] as? String ?? "none" }
        let nats = stats.map { $0?["nat"] as? String ?? "?" }
        let spares = stats.map { Self.transport($0)?["birthday_spares"] as? Int ?? 0 }
        print("birthday (NAT lab, \(pairs) pairs): met \(met.count) of \(pairs), ms \(met.sorted()); missed \(missed)")
        print("birthday (NAT lab): parent links \(Dictionary(grouping: links, by: { $0.split(separator: " ").prefix(2).joined(separator: " ") }).mapValues(\.count)); spares opened \(spares)")
        #expect(nats.allSatisfy { $0 == "hard" }, "the viewers' NATs: \(nats)")
        // 2,048 probes against 256 spares meet with 99.97 %. Until the
        // probing side probed from a spare socket of its own, 605 of 620
        // pairs met over 31 runs: one host at a time missed all its own
        // hard viewers, its router's conntrack showing every probe leaving
        // from another port than its own (43425, not 7400). Linux's
        // masquerade gives a new flow the port of the newest flow from the
        // same inside socket (`find_appropriate_src`); once one probe
        // clashed with a hard viewer's unanswered handshake to the host
        // (its reply tuple taken) and was moved to a free port, every later
        // new flow took that port. Nobody ever sent to a fresh socket's
        // port: nothing to clash with. Since, 200 of 200 over ten runs;
        // one miss in 20 is allowed (0.6 % of runs at 99.97 % a pair).
        #expect(met.count >= pairs - 1, "met \(met.count) of \(pairs): \(missed)")
        #expect(links.filter { $0 == "birthday IPv4" }.count >= pairs - 1, "parent links: \(links)")

        // What the rendezvous relayed in all (its own relay for joiners and
        // hosts, and the transport's for introduced members) against every
        // byte the viewers received, start to end: the pictures come direct,
        // what remains is between the viewers (two hard NATs never meet).
        Thread.sleep(forTimeInterval: 10)
        let received = viewers.map(\.process).snapshot().reduce(0) { $0 + (Self.transport($1)?["bytes_in"] as? Int ?? 0) }
        rv.signal(SIGTERM)
        _ = rv.waitExit()
        let exit = rv.waitFor("exit", timeout: 1)
        let relayed = ((exit?["stats"] as? [String: Any])?["relayed_bytes"] as? Int ?? 0)
            + ((exit?["rendezvous"] as? [String: Any])?["relayed_bytes"] as? Int ?? 0)
        let share = Double(relayed) / Double(max(1, received))
        print("birthday (NAT lab): the rendezvous relayed \(relayed) bytes, the viewers received \(received): \(String(format: "%.2f", share * 100)) %")
        #expect(share < 0.5)
    }

    /// Variant (b): half the homes behind hard NATs (IPv4 only), the host
    /// behind an ordinary one, six viewers, the rendezvous relaying. Hard
    /// viewers' links to ordinary parents go direct by birthday punching;
    /// what two hard homes cannot punch moves to the host's relay after
    /// 2 s; gossip neighbours are drawn from the directly reached. Issue
    /// 48's goal: the rendezvous relays at most 5 % of the bytes the viewers
    /// receive. Once the room has settled it does (each viewer counts
    /// what came over a rendezvous's relay, `bytes_in_via_rendezvous`);
    /// over the room's first 40 s, joins included, it relays 4.6-7.2 %
    /// (each joiner's first keyframe, which leaves before any punch can
    /// meet, and each hard joiner's first half second, before birthday
    /// punching meets; 7.0-9.4 % before a punch the relay won went on
    /// and placement ranked by birthday punching), held under 10 % here.
    @Test func halfTheHomesHardTheRendezvousRelaysAFewPercent() throws {
        let viewers = 6
        let lab = try NATLab(tag: "lvq\(getpid() % 1000)", sites: 1 + viewers, hard: [3, 5, 7])
        defer { lab.remove() }
        let (rv, host, room, _) = try lab.room(relayKbps: 8000, hostArguments: [
            "--size", "320x180", "--fps", "15", "--bitrate", "300", "--audio", "none", "--relay-slots", "2"])
        var all = [rv, host]
        defer { for p in all { p.signal(SIGTERM); _ = p.waitExit() } }
        var joined: [NodeProcess] = []
        for site in 2...(1 + viewers) {
            let v = try lab.run("\(site)", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json",
                                            "--nick", "v\(site)", "--relay-slots", "2"])
            all.append(v)
            joined.append(v)
            Thread.sleep(forTimeInterval: 0.3)
        }
        for (n, v) in joined.enumerated() { #expect(v.waitFor("first_frame", timeout: 20) != nil, "viewer \(n + 2) never played: \(v.stderr)") }
        // The room settled (20 s): over the next 15 s, what the viewers got over the rendezvous's relay.
        Thread.sleep(forTimeInterval: 20)
        func bytes(_ stats: [[String: Any]?]) -> (all: Int, viaRendezvous: Int) {
            stats.reduce((0, 0)) { ($0.0 + (Self.transport($1)?["bytes_in"] as? Int ?? 0), $0.1 + (Self.transport($1)?["bytes_in_via_rendezvous"] as? Int ?? 0)) }
        }
        let before = bytes(joined.snapshot())
        Thread.sleep(forTimeInterval: 15)
        let stats = joined.snapshot()
        let after = bytes(stats)
        let settled = Double(after.viaRendezvous - before.viaRendezvous) / Double(max(1, after.all - before.all))
        let links = stats.map { Self.tree($0)?["parent_link"] as? String ?? "none" }
        let received = stats.reduce(0) { $0 + (Self.transport($1)?["bytes_in"] as? Int ?? 0) }
        rv.signal(SIGTERM)
        _ = rv.waitExit()
        let exit = rv.waitFor("exit", timeout: 1)
        let members = (exit?["stats"] as? [String: Any])?["relayed_bytes"] as? Int ?? 0
        let joins = (exit?["rendezvous"] as? [String: Any])?["relayed_bytes"] as? Int ?? 0
        let relayed = members + joins
        let share = Double(relayed) / Double(max(1, received))
        print("half the homes hard (NAT lab): settled, \(String(format: "%.2f", settled * 100)) % of the viewers' bytes came over the rendezvous's relay (\(after.viaRendezvous - before.viaRendezvous) of \(after.all - before.all) in 15 s)")
        print("half the homes hard (NAT lab): parent links \(links); the rendezvous relayed \(relayed) bytes (\(members) between members, \(joins) between joiners and the host) of the \(received) the viewers received: \(String(format: "%.2f", share * 100)) %")
        #expect(!links.contains("none"), "viewers without a parent: \(links)")
        #expect(share <= 0.10, "the rendezvous relayed \(String(format: "%.1f", share * 100)) % of the viewers' bytes")
        #expect(settled <= 0.05, "settled, \(String(format: "%.1f", settled * 100)) % of the viewers' bytes came over the rendezvous's relay")
    }
}
