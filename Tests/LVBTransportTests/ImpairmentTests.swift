import LVBCore
import LVBTransport
import Testing

@Suite("Impairment")
struct ImpairmentTests {
    static let draws = 100_000

    @Test("an unimpaired link delivers every datagram once, at once")
    func noneDeliversImmediately() {
        let random = SeededRandom(seed: 1)
        for _ in 0..<1000 {
            #expect(Impairment.none.plan(random: random) == [.zero])
        }
    }

    @Test("loss drops about the configured fraction")
    func lossRate() {
        let random = SeededRandom(seed: 2)
        let impairment = Impairment(loss: 0.2)
        let dropped = (0..<Self.draws).filter { _ in impairment.plan(random: random).isEmpty }.count
        #expect(abs(Double(dropped) / Double(Self.draws) - 0.2) < 0.01)
    }

    @Test("duplication doubles about the configured fraction of surviving datagrams")
    func duplicateRate() {
        let random = SeededRandom(seed: 3)
        let impairment = Impairment(loss: 0.1, duplicate: 0.05)
        var survived = 0, doubled = 0
        for _ in 0..<Self.draws {
            let plan = impairment.plan(random: random)
            #expect(plan.count <= 2)
            if !plan.isEmpty { survived += 1 }
            if plan.count == 2 { doubled += 1 }
        }
        #expect(abs(Double(survived) / Double(Self.draws) - 0.9) < 0.01)
        #expect(abs(Double(doubled) / Double(survived) - 0.05) < 0.005)
    }

    @Test("delay plus jitter stays within bounds and averages the midpoint")
    func jitterBounds() {
        let random = SeededRandom(seed: 4)
        let impairment = Impairment(delay: .milliseconds(40), jitter: .milliseconds(10))
        var totalMs = 0.0
        for _ in 0..<Self.draws {
            let plan = impairment.plan(random: random)
            #expect(plan.count == 1)
            guard let d = plan.first else { continue }
            #expect(d >= .milliseconds(40) && d <= .milliseconds(50))
            totalMs += d.milliseconds
        }
        #expect(abs(totalMs / Double(Self.draws) - 45) < 0.2)
    }

    @Test("reordering holds back about the configured fraction by reorderDelay")
    func reorderRate() {
        let random = SeededRandom(seed: 5)
        let impairment = Impairment(delay: .milliseconds(5), reorder: 0.25, reorderDelay: .milliseconds(30))
        var held = 0
        for _ in 0..<Self.draws {
            let plan = impairment.plan(random: random)
            #expect(plan == [.milliseconds(5)] || plan == [.milliseconds(35)])
            if plan == [.milliseconds(35)] { held += 1 }
        }
        #expect(abs(Double(held) / Double(Self.draws) - 0.25) < 0.01)
    }

    @Test("the same seed gives the same plans")
    func deterministic() {
        let impairment = Impairment(loss: 0.3, delay: .milliseconds(10), jitter: .milliseconds(5), duplicate: 0.2, reorder: 0.1)
        let a = SeededRandom(seed: 99), b = SeededRandom(seed: 99)
        for _ in 0..<1000 {
            #expect(impairment.plan(random: a) == impairment.plan(random: b))
        }
    }

    @Test("validate accepts sane values")
    func validateAccepts() throws {
        try Impairment.none.validate()
        try Impairment(loss: 1, delay: .milliseconds(100), jitter: .zero, duplicate: 0, reorder: 1, reorderDelay: .zero).validate()
    }

    @Test("validate names the bad field")
    func validateRejects() {
        #expect(throws: ImpairmentError.probabilityOutOfRange(name: "loss", value: 1.5)) {
            try Impairment(loss: 1.5).validate()
        }
        #expect(throws: ImpairmentError.probabilityOutOfRange(name: "duplicate", value: -0.1)) {
            try Impairment(duplicate: -0.1).validate()
        }
        #expect(throws: ImpairmentError.negativeDuration(name: "jitter", value: .milliseconds(-1))) {
            try Impairment(jitter: .milliseconds(-1)).validate()
        }
        #expect(throws: ImpairmentError.negativeDuration(name: "reorderDelay", value: .seconds(-2))) {
            try Impairment(reorderDelay: .seconds(-2)).validate()
        }
        do {
            try Impairment(reorder: .nan).validate()
            Issue.record("NaN reorder probability was accepted")
        } catch {
            guard case let .probabilityOutOfRange(name, _) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(name == "reorder")
            #expect(error.description.contains("reorder"))
            #expect(error.description.contains("between 0 and 1"))
        }
    }
}
