import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// A room member: a gossip node on the virtual network whose `accept` is its
/// own `RoomState`, with a record of what it applied, refused and blamed.
final class RoomMember {
    let sim: GossipSimNode
    let state: RoomState
    /// How many times each event was applied to `state` (more than once would be a replay).
    private(set) var applied: [EventID: Int] = [:]
    /// Every rule the room state refused an event for.
    private(set) var rejections: [RoomState.RoomRejection] = []
    /// The peers gossip reported for sending something invalid.
    private(set) var blamed: [NodeID] = []
    private var seq: UInt64 = 0

    init(_ sim: GossipSimNode, room: RoomID, host: NodeID, clock: Clock) {
        self.sim = sim
        state = RoomState(room: room, host: host, clock: clock)
        let deliver = sim.gossip.accept  // GossipSimNode's own: records `sim.delivered`
        sim.gossip.accept = { [unowned self] e, from in
            switch state.apply(e) {
            case .accepted:
                applied[e.id, default: 0] += 1
                _ = deliver?(e, from)
                return .accept
            case .duplicate:
                return .duplicate
            case let .rejected(why):
                rejections.append(why)
                return why.isMisbehaviour ? .reject : .duplicate
            }
        }
        sim.gossip.onInvalid = { [unowned self] peer in blamed.append(peer) }
    }

    var id: NodeID { sim.id }
    var identity: Identity { sim.node.core.identity }
    var gossip: GossipNode { sim.gossip }

    /// The member's next event, signed but not yet applied or sent.
    func make(_ body: EventBody) throws -> RoomEvent {
        seq += 1
        return try RoomEvent.make(room: state.room, author: identity, seq: seq, timestamp: 1_700_000_000_000 + seq, body: body)
    }

    /// A restart of the same identity: RoomNode numbers events from the wall
    /// clock in microseconds, so the sequence jumps far ahead.
    func restart(skipping gap: UInt64) { seq += gap }

    /// What an honest client does: applies its own event, then broadcasts it.
    @discardableResult
    func post(_ body: EventBody) throws -> RoomEvent {
        let e = try make(body)
        send(e)
        return e
    }

    func send(_ e: RoomEvent) {
        if case .accepted = state.apply(e) {} else { Issue.record("the author's own room state refused \(e.body.kind)") }
        gossip.broadcast(e)
    }

    func rejected(_ why: RoomState.RoomRejection) -> Int { rejections.filter { $0 == why }.count }
}

/// A room on the virtual network; node 0 is the host.
struct ForgeryRoom {
    let net: VirtualNetwork
    let id: RoomID
    let members: [RoomMember]
    var host: RoomMember { members[0] }

    func others(than excluded: RoomMember...) -> [RoomMember] {
        members.filter { m in !excluded.contains { $0 === m } }
    }

    /// Gossip's invalid-event count per member, to compare before and after.
    var invalidCounts: [NodeID: Int] {
        Dictionary(uniqueKeysWithValues: members.map { ($0.id, $0.gossip.stats.invalid) })
    }

    /// The members whose gossip neighbour `m` is (the first to hear what it sends).
    func neighbours(of m: RoomMember) -> [RoomMember] {
        members.filter { m.gossip.active.contains($0.id) }
    }

    /// Sends `eventBytes` as an EVENT over `attacker`'s own sessions to each of
    /// its neighbours, as a malicious relay would; returns them.
    @discardableResult
    func inject(_ eventBytes: [UInt8], from attacker: RoomMember) throws -> [RoomMember] {
        let payload = GossipMessage.event(eventBytes[...]).bytes
        let targets = neighbours(of: attacker)
        for t in targets { try attacker.sim.node.core.send(payload, channel: .gossip, to: t.id) }
        return targets
    }
}
