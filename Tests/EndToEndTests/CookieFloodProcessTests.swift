import Foundation
import LVBCore
import LVBCrypto
import LVBTransport
import Testing

/// The cookie mechanism of lvbnode-protocol(7) seen from outside the binary:
/// valid IK initiations (made with the project's own handshake code, each
/// from a new identity) from many UDP ports on loopback. At most 200 within
/// one second are answered with a handshake response; every one beyond gets
/// a cookie reply, no reply is larger than its request, and an honest
/// joiner still gets in while the flood goes on.
@Suite(.serialized, .ownThread) struct CookieFloodProcessTests {
    static let threshold = 200

    /// What came back for one batch of initiations.
    struct Answers {
        var responses = 0, cookies = 0, other = 0
        var oversized: [String] = []
    }

    /// Sends `initiations` round-robin from `probes`, `spacing` seconds apart.
    private func send(_ initiations: [[UInt8]], from probes: [UDPProbe], to port: UInt16, spacing: Double) {
        let start = Date()
        for (n, datagram) in initiations.enumerated() {
            probes[n % probes.count].send(datagram, toPort: port)
            let due = start.addingTimeInterval(Double(n + 1) * spacing)
            let wait = due.timeIntervalSinceNow
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        }
    }

    /// Collects replies to `initiations` until `expected` arrived or `timeout`.
    private func collect(_ initiations: [[UInt8]], from probes: [UDPProbe], expected: Int, timeout: Double) -> Answers {
        var requests: [UInt32: Int] = [:]  // sender index -> request size
        for d in initiations { requests[index(at: 4, of: d)] = d.count }
        var answers = Answers()
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            for probe in probes {
                for reply in probe.drain() {
                    // IK response: type 2, sender index, receiver index (offset 8).
                    // Cookie reply: type 3, receiver index (offset 4).
                    let receiver: UInt32
                    switch reply.first {
                    case PacketType.ikResponse.rawValue?: answers.responses += 1; receiver = index(at: 8, of: reply)
                    case PacketType.cookieReply.rawValue?: answers.cookies += 1; receiver = index(at: 4, of: reply)
                    default: answers.other += 1; continue
                    }
                    if let size = requests[receiver], reply.count > size {
                        answers.oversized.append("\(reply.count)-byte reply to a \(size)-byte request")
                    }
                }
            }
            if answers.responses + answers.cookies + answers.other >= expected { break }
            Thread.sleep(forTimeInterval: 0.01)
        } while Date() < deadline
        return answers
    }

    @Test func aFloodJustAboveTheThresholdGetsCookiesAndAnHonestJoinerStillGetsIn() throws {
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--video", "none", "--audio", "none"])
        defer { host.signal(SIGKILL) }
        let ready = try #require(host.waitFor("ready"), "host never became ready: \(host.stderr)")
        let ticket = try #require(ready["ticket"] as? String)
        let hostID = try JoinTicket(text: ticket).host
        let port = try #require((ready["listen"] as? String)?.split(separator: ":").last.flatMap { UInt16($0) })

        // One socket, so one source port, per initiation of a batch.
        let probes = try (0..<(Self.threshold + 40)).map { _ in try UDPProbe() }
        func batch(_ count: Int) -> [[UInt8]] { (0..<count).map { _ in CraftedNode.ikInitiation(to: hostID, port: port) } }
        let exactlyAtThreshold = batch(Self.threshold)
        let justAbove = batch(Self.threshold + 40)
        let sustained = batch(600)

        // 200 within half a second: all answered, no cookie.
        send(exactlyAtThreshold, from: probes, to: port, spacing: 0.0025)
        let atThreshold = collect(exactlyAtThreshold, from: probes, expected: Self.threshold, timeout: 5)
        #expect(atThreshold.responses == Self.threshold)
        #expect(atThreshold.cookies == 0)

        // A second later (the window is empty again): 240 within 0.6 s.
        Thread.sleep(forTimeInterval: 1.1)
        send(justAbove, from: probes, to: port, spacing: 0.0025)
        let above = collect(justAbove, from: probes, expected: justAbove.count, timeout: 5)
        #expect(above.responses == Self.threshold, "responses beyond the threshold")
        #expect(above.cookies == 40, "cookie replies to the 40 initiations over the threshold")
        #expect(above.other == 0)
        #expect(above.oversized.isEmpty, "\(above.oversized.prefix(3))")

        // Keep the host over the threshold (about 330 a second, at most 2 s)
        // while an honest joiner dials it: it gets a cookie, resends at once
        // with mac2 and is admitted.
        let joiner = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--no-media", "--duration", "20"])
        defer { joiner.signal(SIGKILL) }
        var sent = 0
        while sent < sustained.count, joiner.events.first(where: { $0["event"] as? String == "admitted" }) == nil {
            let chunk = Array(sustained[sent..<min(sent + 10, sustained.count)])
            send(chunk, from: probes, to: port, spacing: 0.003)
            sent += chunk.count
        }
        let flood = collect(Array(sustained[..<sent]), from: probes, expected: sent, timeout: 3)
        #expect(joiner.waitFor("admitted", timeout: 10) != nil, "joiner not admitted under load: \(joiner.stderr)")
        #expect(flood.oversized.isEmpty, "\(flood.oversized.prefix(3))")
        #expect(flood.cookies > 0)

        joiner.send("/quit")
        #expect(joiner.waitExit() == 0)
        host.signal(SIGTERM)
        #expect(host.waitExit() == 0)
        let stats = try #require(host.events.last(where: { $0["event"] as? String == "exit" })?["stats"] as? [String: Any])
        let hostCookies = try #require(stats["cookie_replies"] as? Int)
        // Every cookie reply the host counted went to our probes, but at least one went to the joiner.
        #expect(hostCookies > above.cookies + flood.cookies, "the joiner was never asked for a cookie")
        // Nothing was sent to an unauthenticated source that was larger than what it sent.
        #expect((stats["bytes_out"] as? Int ?? .max) <= (stats["bytes_in"] as? Int ?? 0))
        print("cookie flood: \(exactlyAtThreshold.count) in 0.5 s → \(atThreshold.responses) responses, "
            + "\(atThreshold.cookies) cookie replies; \(justAbove.count) in 0.6 s → \(above.responses) / \(above.cookies); "
            + "\(sent) more at ~330/s while a joiner dialled → \(flood.responses) / \(flood.cookies), joiner admitted; "
            + "host cookie_replies \(hostCookies), bytes in \(stats["bytes_in"] ?? "?") / out \(stats["bytes_out"] ?? "?")")
    }
}
