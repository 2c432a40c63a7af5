import LVBCore
import LVBCrypto
import LVBMedia
import LVBTransport

/// What the node that feeds a stream cost this node while it did: NACK
/// packets sent to it, signature checks of what it sent, and refusals
/// (lvbnode(1), the `forged_media` warning: the price of a lie).
public struct FeederCost: Sendable, Equatable {
    public var nacks = 0
    public var signatureChecks = 0
    public var refusals = 0

    public init(nacks: Int = 0, signatureChecks: Int = 0, refusals: Int = 0) {
        self.nacks = nacks
        self.signatureChecks = signatureChecks
        self.refusals = refusals
    }

    public static func + (a: FeederCost, b: FeederCost) -> FeederCost {
        FeederCost(nacks: a.nacks + b.nacks, signatureChecks: a.signatureChecks + b.signatureChecks, refusals: a.refusals + b.refusals)
    }

    /// (Never below zero: a stream's totals restart when its receiver takes over from the relay's own check.)
    public static func - (a: FeederCost, b: FeederCost) -> FeederCost {
        FeederCost(nacks: max(0, a.nacks - b.nacks), signatureChecks: max(0, a.signatureChecks - b.signatureChecks),
                   refusals: max(0, a.refusals - b.refusals))
    }
}

/// Each feeder's cost, from a stream's running totals (which only grow):
/// what a feeder cost is the totals' growth while it fed the stream.
struct FeederLedger {
    private var settled: [NodeID: FeederCost] = [:]
    /// Per origin: its feeder now, and the totals when it began.
    private var current: [NodeID: (feeder: NodeID, base: FeederCost)] = [:]

    /// `origin`'s stream is fed by `feeder` from now on; `totals` are its running totals now.
    mutating func fed(_ origin: NodeID, by feeder: NodeID, totals: FeederCost) {
        settle(origin, totals: totals)
        current[origin] = (feeder, totals)
    }

    /// `origin`'s stream ends here (its receiver goes): its feeder's share is kept.
    mutating func settle(_ origin: NodeID, totals: FeederCost) {
        if let (feeder, base) = current.removeValue(forKey: origin) { settled[feeder] = (settled[feeder] ?? FeederCost()) + (totals - base) }
    }

    /// What `feeder` has cost so far; `totals(origin)` gives the running totals of a stream it feeds now.
    func cost(of feeder: NodeID, totals: (NodeID) -> FeederCost?) -> FeederCost {
        var cost = settled[feeder] ?? FeederCost()
        for (origin, now) in current where now.feeder == feeder {
            if let t = totals(origin) { cost = cost + (t - now.base) }
        }
        return cost
    }
}

extension NodeMedia {
    /// What `feeder` cost this node while it fed it a stream: NACKs, checks, refusals.
    public func cost(of feeder: NodeID) -> FeederCost { ledger.cost(of: feeder, totals: totals(of:)) }

    /// `origin`'s stream's running totals: its receiver's, or the relay's own check's.
    func totals(of origin: NodeID) -> FeederCost? {
        if let r = receivers[origin] {
            return FeederCost(nacks: r.nacksSent, signatureChecks: r.checker.stats.signatureChecks, refusals: r.checker.stats.refusedTotal)
        }
        guard origin == relayedOrigin, let stats = relayChecker?.stats else { return nil }
        return FeederCost(signatureChecks: stats.signatureChecks, refusals: stats.refusedTotal)
    }
}
