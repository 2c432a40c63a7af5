import Foundation
import LVBMedia
import LVBMesh
import Testing

/// A PK between two rooms whose hosts sit behind their own home NATs, and
/// whose viewers sit behind theirs (`NATLab`'s namespaces): red asks blue by
/// room id, the rendezvous introduces the two hosts (or relays them, past
/// hard NATs), and each viewer's pictures show both hosts side by side,
/// then its own host alone again after `/pk end`. With the internet
/// numbered from public and from private ranges, and with both hosts
/// behind random-port NATs and the rendezvous relaying.
@Suite(.serialized, .ownThread, .enabled(if: NATLab.available)) struct NATPKProcessTests {
    enum Variant: String, CustomStringConvertible, CaseIterable {
        case publicRange, privateRange, hardNATsRelayed
        var description: String { rawValue }
        var internet: NATLab.Internet { self == .privateRange ? .privateRange : .publicRange }
        /// Homes 1 and 2 (the hosts') with random-port NATs.
        var hard: Set<Int> { self == .hardNATsRelayed ? [1, 2] : [] }
        var relayKbps: Int { self == .hardNATsRelayed ? 8000 : 0 }
    }

    static let size = (width: 160, height: 96)
    static let red: (UInt8, UInt8, UInt8) = (81, 90, 240), blue: (UInt8, UInt8, UInt8) = (41, 240, 110)

    @Test(arguments: Variant.allCases)
    func twoHostsBehindTheirOwnNATsMeetForAPKAndBothAudiencesSeeBoth(_ variant: Variant) throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writeSolidY4M(dir + "/red.y4m", width: Self.size.width, height: Self.size.height, colour: Self.red)
        try writeSolidY4M(dir + "/blue.y4m", width: Self.size.width, height: Self.size.height, colour: Self.blue)
        let lab = try NATLab(tag: "lvp\(getpid() % 1000)", sites: 4, internet: variant.internet, hard: variant.hard)
        defer { lab.remove() }
        let media = ["--size", "\(Self.size.width)x\(Self.size.height)", "--fps", "15", "--gop", "1", "--bitrate", "150", "--audio", "none"]
        let (rv, a, roomA, _) = try lab.room(relayKbps: variant.relayKbps, hostArguments: media + ["--video", dir + "/red.y4m", "--title", "red"])
        var processes = [rv, a]
        defer { for p in processes.reversed() { p.signal(SIGTERM); _ = p.waitExit() } }
        let b = try lab.run("2", ["host", "--ephemeral", "--listen", "0.0.0.0:7400", "--json", "--rendezvous", lab.rendezvous,
                                  "--video", dir + "/blue.y4m", "--title", "blue"] + media)
        processes.append(b)
        let roomB = try #require(b.waitFor("ready")?["room"] as? String, "blue: \(b.stderr)")
        Thread.sleep(forTimeInterval: 1)  // its first announcement
        let va = try lab.run("3", ["join", roomA, "--rendezvous", lab.rendezvous, "--ephemeral", "--json", "--video-out", dir + "/va.y4m"])
        let vb = try lab.run("4", ["join", roomB, "--rendezvous", lab.rendezvous, "--ephemeral", "--json", "--video-out", dir + "/vb.y4m"])
        processes += [va, vb]
        for v in [va, vb] { #expect(v.waitFor("first_frame", timeout: 15) != nil, "(\(variant)) viewer: \(v.stderr)") }
        Thread.sleep(forTimeInterval: 2)

        a.send("/pk \(roomB) 1")
        #expect(b.waitFor("pk_request", timeout: 20) != nil, "(\(variant)) blue never heard the request: \(a.events.suffix(4)) \(b.stderr)")
        b.send("/pk accept")
        for (p, other) in [(va, roomB), (vb, roomA)] {
            #expect(p.waitFor("pk_started", timeout: 10)?["room"] as? String == other, "(\(variant)) \(p.events.suffix(3))")
        }
        Thread.sleep(forTimeInterval: 5)
        a.send("/pk end")
        for p in [va, vb] { #expect(p.waitFor("pk_ended", timeout: 10) != nil, "(\(variant))") }
        Thread.sleep(forTimeInterval: 3)
        a.send("/peers")
        let path = (a.waitFor("peers", timeout: 5)?["peers"] as? [[String: Any]])?.first { $0["id"] as? String == b.events.first?["id"] as? String }?["path"]
        print("NAT PK (\(variant)): the hosts' session runs \(path.map { "\($0)" } ?? "?")")
        for v in [va, vb] {
            v.send("/quit")
            _ = v.waitExit(timeout: 20)
        }
        #expect(try SideBySide.runs(dir + "/va.y4m") == ["RR", "RB", "RR"], "(\(variant)) red's viewer")
        #expect(try SideBySide.runs(dir + "/vb.y4m") == ["BB", "BR", "BB"], "(\(variant)) blue's viewer")
    }
}
