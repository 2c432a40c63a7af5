import Foundation
import Testing

/// The online quiz between real processes over loopback: the host asks on
/// its console, members answer on theirs, every node prints the question
/// and the same tally as JSON, and a readable console shows the same.
@Suite(.serialized, .ownThread) struct QuizProcessTests {
    @Test func theHostAsksMembersAnswerAndEveryNodeGetsTheSameTally() throws {
        let hana = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--nick", "hana", "--video", "none", "--audio", "none"])
        let ticket = try #require(hana.waitFor("ready")?["ticket"] as? String, "host never became ready: \(hana.stderr)")
        let ana = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--nick", "ana"])
        let ben = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--nick", "ben"])
        // A readable console (no --json): what a person sees.
        let cy = try NodeProcess(["join", ticket, "--ephemeral", "--nick", "cy"])
        defer { for p in [hana, ana, ben, cy] { p.signal(SIGTERM); _ = p.waitExit() } }
        for v in [ana, ben] { #expect(v.waitFor("admitted") != nil, "not admitted: \(v.stderr)") }
        #expect(cy.waitForText("in room", timeout: 15), "cy never got in: \(cy.stdout)")
        let anaID = try #require(ana.waitFor("ready")?["id"] as? String)
        Thread.sleep(forTimeInterval: 1)

        ana.send("/quiz 8 Who wins? | red | blue")
        #expect(ana.waitFor("error", where: { ($0["message"] as? String)?.contains("only the host") == true }) != nil)
        hana.send("/quiz 8 Which planet is largest? | Mars | Jupiter | Venus")
        var id = ""
        for p in [hana, ana, ben] {
            let q = p.waitFor("quiz")
            #expect(q?["question"] as? String == "Which planet is largest?")
            #expect(q?["options"] as? [String] == ["Mars", "Jupiter", "Venus"])
            #expect((q?["ends_at"] as? Int).map { $0 > 1_700_000_000_000 } == true)
            id = q?["id"] as? String ?? ""
        }
        #expect(id.count == 16)
        #expect(cy.waitForText("quiz (8 s): Which planet is largest?", timeout: 10), "\(cy.stdout)")

        ana.send("/answer 2")
        ben.send("/answer 1")
        cy.send("/answer 2")
        #expect(ana.waitFor("quiz_answer", where: { $0["status"] as? String == "counted" && $0["answer"] as? Int == 2 }) != nil)
        #expect(ben.waitFor("quiz_answer", where: { $0["status"] as? String == "counted" }) != nil)
        #expect(cy.waitForText("the host counted your answer 2", timeout: 10), "\(cy.stdout)")
        ana.send("/answer 3")
        #expect(ana.waitFor("error", where: { ($0["message"] as? String)?.contains("already answered") == true }) != nil)
        ben.send("/answer 9")
        #expect(ben.waitFor("error", where: { ($0["message"] as? String)?.contains("options 1 to 3") == true }) != nil)

        // Time is up: the host's signed tally everywhere, the same.
        for p in [hana, ana, ben] {
            let r = p.waitFor("quiz_result", timeout: 15)
            #expect(r?["id"] as? String == id)
            #expect(r?["counts"] as? [Int] == [1, 2, 0])
            #expect(r?["answer"] is NSNull)
        }
        #expect(cy.waitForText("quiz over: 1) 1  2) 2  3) 0", timeout: 10), "\(cy.stdout)")

        hana.send("/reveal 2")
        for p in [hana, ana, ben] {
            let r = p.waitFor("quiz_result", where: { $0["answer"] as? Int == 2 })
            #expect(r?["winners_count"] as? Int == 2)
            let winners = (r?["winners"] as? [[String: Any]])?.compactMap { $0["nick"] as? String }
            #expect(Set(winners ?? []) == ["ana", "cy"])
            #expect((r?["winners"] as? [[String: Any]])?.contains { $0["id"] as? String == anaID } == true)
        }
        #expect(cy.waitForText("the answer is 2", timeout: 10), "\(cy.stdout)")

        // A late joiner gets the question and its result.
        let dee = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--nick", "dee"])
        defer { dee.signal(SIGTERM); _ = dee.waitExit() }
        #expect(dee.waitFor("quiz", where: { $0["id"] as? String == id }) != nil)
        #expect(dee.waitFor("quiz_result", where: { $0["answer"] as? Int == 2 }) != nil)
        dee.send("/answer 1")
        #expect(dee.waitFor("error", where: { ($0["message"] as? String)?.contains("no quiz is open") == true }) != nil)
    }
}
