import LVBCore
import LVBCrypto
import Testing

/// The transport replay window (RFC 6479 bitmap, as in WireGuard). The table
/// follows the cases of the Linux kernel's WireGuard self-test, which
/// wireguard-go's replay_test.go also carries, with our window and limit.
@Suite struct ReplayWindowTests {
    /// The transport's counter limit (`TransportConstants.rejectAfterMessages`).
    static let limit = UInt64.max - (1 << 13)
    static let size = ReplayWindow.windowSize
    /// The first counter that falls out of the window once counter 0 has been seen.
    static let beyond = size + 1

    struct Step: CustomStringConvertible {
        let counter: UInt64
        let accepted: Bool
        let why: String
        init(_ counter: UInt64, _ accepted: Bool, _ why: String = "") {
            self.counter = counter
            self.accepted = accepted
            self.why = why
        }
        var description: String { "\(counter) → \(accepted ? "accept" : "reject") \(why)" }
    }

    /// Runs the steps in order on `window`, naming the step that went wrong.
    static func run(_ steps: [Step], on window: inout ReplayWindow,
                    sourceLocation: SourceLocation = #_sourceLocation) {
        for (i, step) in steps.enumerated() {
            let got = window.accept(step.counter, limit: limit)
            #expect(got == step.accepted, "step \(i + 1): \(step)", sourceLocation: sourceLocation)
        }
    }

    @Test func windowIsWireGuardsAndAtLeastTheRequired2048() {
        #expect(Self.size == 8128)   // 128 blocks of 64 bits, one block of slack
        #expect(Self.size >= 2048)
    }

    @Test func kernelSelfTestTable() {
        let t = Self.beyond
        let l = Self.limit
        var window = ReplayWindow()
        Self.run([
            Step(0, true, "first packet"),
            Step(1, true, "next in order"),
            Step(1, false, "duplicate"),
            Step(9, true, "skip ahead"),
            Step(8, true, "late, inside the window"),
            Step(7, true, "late, inside the window"),
            Step(7, false, "late duplicate"),
            Step(t, true, "slide: 0 falls out"),
            Step(t - 1, true, "just behind newest"),
            Step(t - 1, false, "duplicate"),
            Step(t - 2, true, "late"),
            Step(2, true, "exactly at the back edge"),
            Step(2, false, "duplicate at the back edge"),
            Step(t + 16, true, "slide by 16"),
            Step(3, false, "now outside the window"),
            Step(t + 16, false, "duplicate of newest"),
            Step(t * 4, true, "far jump forward"),
            Step(t * 4 - (t - 1), true, "back edge after the jump"),
            Step(10, false, "far behind"),
            Step(t * 4 - t, false, "one past the back edge"),
            Step(t * 4 - (t + 1), false, "two past the back edge"),
            Step(t * 4 - (t - 2), true, "just inside the back edge"),
            Step(t * 4 + 1 - t, false, "duplicate of an accepted back-edge counter"),
            Step(0, false, "far behind"),
            Step(l, false, "at the limit"),
            Step(l - 1, true, "last usable counter"),
            Step(l, false, "at the limit"),
            Step(l - 1, false, "duplicate of the last usable counter"),
            Step(l - 2, true, "late, below the limit"),
            Step(l + 1, false, "above the limit"),
            Step(l + 2, false, "above the limit"),
            Step(l - 2, false, "duplicate"),
            Step(l - 3, true, "late, below the limit"),
            Step(0, false, "far behind"),
        ], on: &window)
    }

    @Test func inOrderFillThenZeroAtTheBackEdge() {
        var window = ReplayWindow()
        Self.run((1...Self.size).map { Step($0, true) }, on: &window)
        Self.run([Step(0, true, "exactly windowSize behind"), Step(0, false, "duplicate")], on: &window)
    }

    @Test func inOrderFillThenZeroFallsOut() {
        var window = ReplayWindow()
        Self.run((2...Self.size + 1).map { Step($0, true) }, on: &window)
        Self.run([Step(1, true, "exactly windowSize behind"), Step(0, false, "one past the window")], on: &window)
    }

    @Test func descendingFromBeyondTheWindow() {
        var window = ReplayWindow()
        Self.run((1...Self.size + 1).reversed().map { Step($0, true) }, on: &window)
    }

    @Test func descendingThenZeroFallsOut() {
        var window = ReplayWindow()
        Self.run((2...Self.size + 2).reversed().map { Step($0, true) }, on: &window)
        Self.run([Step(0, false, "windowSize + 2 behind")], on: &window)
    }

    @Test func descendingThenNewHeadPushesZeroOut() {
        var window = ReplayWindow()
        Self.run((1...Self.size).reversed().map { Step($0, true) }, on: &window)
        Self.run([Step(Self.size + 1, true), Step(0, false, "windowSize + 1 behind")], on: &window)
    }

    @Test func descendingThenZeroThenNewHead() {
        var window = ReplayWindow()
        Self.run((1...Self.size).reversed().map { Step($0, true) }, on: &window)
        Self.run([Step(0, true, "exactly windowSize behind"), Step(Self.size + 1, true)], on: &window)
    }

    /// Everything inside the window arrives shuffled: each is accepted once,
    /// then every one of them is a replay.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func shuffledWithinTheWindowAcceptedExactlyOnce(seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        let newest: UInt64 = 20_000
        var window = ReplayWindow()
        Self.run([Step(newest, true)], on: &window)
        let late = Array((newest - Self.size)..<newest).shuffled(using: &rng)
        Self.run(late.map { Step($0, true, "first arrival") }, on: &window)
        Self.run(late.shuffled(using: &rng).map { Step($0, false, "replay") }, on: &window)
        Self.run([Step(newest, false), Step(newest - Self.size - 1, false, "outside")], on: &window)
    }

    /// A jump of exactly one ring's length lands on the slot of counter 0's
    /// block: the bits left there must not make new counters look replayed.
    @Test func ringSlotsAreClearedWhenTheWindowWrapsAround() {
        var window = ReplayWindow()
        Self.run((0..<64).map { Step($0, true) }, on: &window)
        let wrapped = 64 * 128 + UInt64(5)           // same slot as counters 0..<64
        Self.run([Step(wrapped, true)], on: &window)
        Self.run((64 * 128..<wrapped).map { Step($0, true, "same slot, new block") }, on: &window)
        Self.run((0..<64).map { Step($0, false, "a whole ring behind") }, on: &window)
    }

    /// After a jump beyond the whole ring nothing from before is remembered
    /// wrongly: the counters just behind the new head are all fresh.
    @Test func farJumpForwardRejectsOldAndAcceptsRecent() {
        var window = ReplayWindow()
        Self.run((0..<500).map { Step($0, true) }, on: &window)
        let head: UInt64 = 1 << 40
        Self.run([Step(head, true)], on: &window)
        Self.run((0..<500).map { Step($0, false, "before the jump") }, on: &window)
        Self.run(((head - Self.size)..<head).map { Step($0, true, "recent, never seen") }, on: &window)
        Self.run([Step(head - Self.size - 1, false, "just outside")], on: &window)
    }

    /// Counters at or above the limit never move the window.
    @Test func rejectedCountersDoNotMoveTheWindow() {
        var window = ReplayWindow()
        Self.run([Step(100, true)], on: &window)
        Self.run([Step(Self.limit, false), Step(UInt64.max, false)], on: &window)
        Self.run([Step(99, true, "still inside: the window did not slide"), Step(0, true)], on: &window)
    }

    @Test func limitIsExclusive() {
        var window = ReplayWindow()
        let results = [
            window.accept(5, limit: 5), window.accept(4, limit: 5), window.accept(0, limit: 0),
            window.accept(UInt64.max, limit: UInt64.max), window.accept(UInt64.max - 1, limit: UInt64.max),
        ]
        #expect(results == [false, true, false, false, true])
    }
}
