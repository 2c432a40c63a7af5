import Foundation
import Testing

/// A live room of real processes over loopback: one host and three joiners
/// driven through stdin, checked through their `--json` output.
@Suite(.serialized, .ownThread) struct RoomProcessTests {
    private func host(_ extra: [String] = []) throws -> (NodeProcess, ticket: String) {
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--nick", "hana", "--video", "none", "--audio", "none"] + extra)
        let ticket = try #require(host.waitFor("ready")?["ticket"] as? String, "host never became ready: \(host.stderr)")
        return (host, ticket)
    }

    private func join(_ ticket: String, nick: String, _ extra: [String] = []) throws -> NodeProcess {
        try NodeProcess(["join", ticket, "--ephemeral", "--json", "--nick", nick] + extra)
    }

    private func id(_ p: NodeProcess) -> String? { p.waitFor("ready")?["id"] as? String }

    @Test func chatDanmakuLikesPresenceKickAndCloseReachEveryNode() throws {
        let (hana, ticket) = try host()
        let ana = try join(ticket, nick: "ana")
        let ben = try join(ticket, nick: "ben")
        let cy = try join(ticket, nick: "cy")
        let everyone = [hana, ana, ben, cy]
        for v in [ana, ben, cy] { #expect(v.waitFor("admitted") != nil, "not admitted: \(v.stderr)") }
        let benID = try #require(id(ben)), cyID = try #require(id(cy))
        // Everyone sees everyone (presence spreads by gossip, not via the host alone).
        for p in everyone {
            for other in [ana, ben, cy] where other !== p {
                let otherID = try #require(id(other))
                #expect(p.waitFor("joined", where: { $0["id"] as? String == otherID }) != nil)
            }
        }

        ana.send("hello from ana")
        ben.send("/danmaku #00ff00 wow")
        ana.send("/like 3")
        ben.send("/like 2")
        hana.send("/like")
        for p in everyone {
            #expect(p.waitFor("chat", where: { $0["text"] as? String == "hello from ana" && $0["nick"] as? String == "ana" }) != nil)
            #expect(p.waitFor("danmaku", where: { $0["text"] as? String == "wow" && $0["color"] as? String == "#00ff00" }) != nil)
            // Grow-only likes converge to the same total everywhere.
            #expect(p.waitFor("like", where: { $0["total"] as? Int == 6 }) != nil)
        }

        // A late joiner gets the history: recent chat, like totals, who is here, room info.
        let dee = try join(ticket, nick: "dee")
        #expect(dee.waitFor("chat", where: { $0["text"] as? String == "hello from ana" }) != nil)
        #expect(dee.waitFor("like", where: { $0["total"] as? Int == 6 }) != nil)
        #expect(dee.waitFor("joined", where: { $0["id"] as? String == benID }) != nil)
        #expect(dee.waitFor("room_info") != nil)
        dee.send("/quit")
        #expect(dee.waitExit() == 0)

        cy.send("/quit")
        #expect(cy.waitExit() == 0)
        for p in [hana, ana, ben] {
            #expect(p.waitFor("left", where: { $0["id"] as? String == cyID && $0["reason"] as? String == "left" }) != nil)
        }

        hana.send("/kick ben")
        #expect(ben.waitFor("kicked", where: { $0["id"] as? String == benID }) != nil)
        #expect(ben.waitExit() == 3)
        #expect(ana.waitFor("kicked", where: { $0["id"] as? String == benID }) != nil)

        ana.send("/kick hana")
        #expect(ana.waitFor("error", where: { ($0["message"] as? String)?.contains("only the host") == true }) != nil)
        ana.send("/nonsense")
        #expect(ana.waitFor("error", where: { ($0["message"] as? String)?.contains("/help") == true }) != nil)

        hana.send("/close")
        for p in [hana, ana] {
            #expect(p.waitFor("room_closed") != nil)
            #expect(p.waitExit() == 0)
        }
    }

    @Test func giftsReachEveryNodeOnceAsCombosAndTheHostsRankReachesALateJoiner() throws {
        let (hana, ticket) = try host()
        let ana = try join(ticket, nick: "ana")
        let ben = try join(ticket, nick: "ben")
        let everyone = [hana, ana, ben]
        for v in [ana, ben] { #expect(v.waitFor("admitted") != nil, "not admitted: \(v.stderr)") }
        let anaID = try #require(id(ana)), benID = try #require(id(ben))
        for p in everyone {
            for other in [ana, ben] where other !== p {
                let otherID = try #require(id(other))
                #expect(p.waitFor("joined", where: { $0["id"] as? String == otherID }) != nil)
            }
        }
        ana.send("/gift rocket 3")
        for _ in 0..<4 { ben.send("/gift rose") }
        ben.send("/gift tulip")
        #expect(ben.waitFor("error", where: { ($0["message"] as? String)?.contains("/gift NAME") == true }) != nil)
        for p in everyone {
            // Each combo ends with its final count; the single rocket needs no second word.
            #expect(p.waitFor("gift_combo", where: { $0["id"] as? String == benID && $0["count"] as? Int == 4 && $0["points"] as? Int == 4 }) != nil,
                    "no combo end: \(p.stderr)")
            #expect(p.waitFor("gift_rank", where: { ($0["total"] as? Int) == 304 }) != nil)
        }
        Thread.sleep(forTimeInterval: 1)
        for p in everyone {
            let gifts = p.events.filter { $0["event"] as? String == "gift" }
            let rockets = gifts.filter { $0["gift"] as? String == "rocket" }
            #expect(rockets.count == 1 && rockets.first?["count"] as? Int == 3 && rockets.first?["id"] as? String == anaID, "\(rockets)")
            let roses = gifts.filter { $0["gift"] as? String == "rose" }
            #expect(roses.compactMap { $0["combo_count"] as? Int }.sorted() == [1, 2, 3, 4], "\(roses)")
            #expect(Set(roses.compactMap { $0["combo"] as? Int }).count == 1)
            #expect(p.events.filter { $0["event"] as? String == "gift_combo" }.count == 1)
        }
        // A late joiner: the rank comes with its history, most points first.
        let dee = try join(ticket, nick: "dee")
        let rank = try #require(dee.waitFor("gift_rank", where: { ($0["total"] as? Int) == 304 }))
        let top = try #require(rank["top"] as? [[String: Any]])
        #expect(top.compactMap { $0["id"] as? String } == [anaID, benID])
        #expect(top.compactMap { $0["points"] as? Int } == [300, 4])
        let before = dee.events.count
        dee.send("/rank")
        #expect(dee.waitFor("gift_rank", after: before, where: { ($0["top"] as? [[String: Any]])?.count == 2 }) != nil)
        for p in [hana, ana, ben, dee] { p.send("/quit") }
        for p in [hana, ana, ben, dee] { #expect(p.waitExit() == 0) }
    }

    @Test func theSameIdentityJoiningAgainReplacesTheOlderNode() throws {
        let (hana, ticket) = try host()
        let home = temporaryDirectory()
        let first = try NodeProcess(["join", ticket, "--home", home, "--json", "--nick", "first"])
        #expect(first.waitFor("admitted") != nil)
        let second = try NodeProcess(["join", ticket, "--home", home, "--json", "--nick", "second"])
        #expect(second.waitFor("admitted") != nil)
        #expect(first.waitFor("signed_in_elsewhere") != nil)
        #expect(first.waitExit() == 3)
        #expect(first.stderr.contains("signed in elsewhere"))
        second.send("still here")
        #expect(hana.waitFor("chat", where: { $0["text"] as? String == "still here" }) != nil)
        second.send("/quit")
        #expect(second.waitExit() == 0)
        hana.signal(SIGTERM)
        #expect(hana.waitExit() == 0)
    }

    @Test func aPasswordRoomAdmitsTheRightPasswordAndTellsTheWrongOneNothing() throws {
        let (hana, ticket) = try host(["--password", "open sesame"])
        let good = try join(ticket, nick: "good", ["--password", "open sesame"])
        #expect(good.waitFor("admitted") != nil, "\(good.stderr)")
        let bad = try join(ticket, nick: "bad", ["--password", "guess"])
        #expect(bad.waitExit(timeout: 30) == 1)
        #expect(bad.stderr.contains("wrong room password"))
        #expect(bad.events.allSatisfy { !["admitted", "joined", "chat", "viewers"].contains($0["event"] as? String ?? "") })
        let (status, _, err) = try runToEnd(["join", ticket, "--ephemeral"])
        #expect(status == 64)
        #expect(err.contains("--password"))
        good.send("/quit")
        _ = good.waitExit()
        hana.signal(SIGINT)
        #expect(hana.waitExit() == 0)
    }

    @Test func anInviteOnlyRoomAdmitsTheInvitee() throws {
        let (hana, ticket) = try host(["--invite-only"])
        let home = temporaryDirectory()
        let (_, guestID, _) = try runToEnd(["id", "--home", home])
        hana.send("/invite \(guestID.trimmingCharacters(in: .whitespacesAndNewlines))")
        let invite = try #require(hana.waitFor("invite")?["invite"] as? String)
        let guest = try NodeProcess(["join", ticket, "--home", home, "--json", "--invite", invite])
        #expect(guest.waitFor("admitted") != nil, "\(guest.stderr)")
        let stranger = try join(ticket, nick: "x", ["--invite", invite])
        #expect(stranger.waitExit(timeout: 30) == 1)
        guest.send("/quit")
        _ = guest.waitExit()
        hana.signal(SIGTERM)
        #expect(hana.waitExit() == 0)
    }
}
