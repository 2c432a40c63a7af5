import LVBCore
import LVBCrypto
import LVBGossip

/// A part of the room (the quiz, and in time link-mic, PK, gifts…) that
/// owns what it needs: its state, its event kinds and room messages, its
/// tick, what it does when the room changes or a peer goes, its console
/// and page commands, and how its outputs show. The room node knows none
/// of it by name: a feature is files of its own and one line in
/// `RoomFeatures.all` (libp2p's stream handlers, pion's interceptors: the
/// host holds the table, each entry its own state).
///
/// Everything runs on the node's event loop, like the room node itself.
protocol RoomFeature: AnyObject {
    /// One per room node, made with it (the node's stored properties are
    /// all set; it is not in a room yet). The feature holds it unowned.
    init(node: RoomNode)

    /// The event kinds it brings (their rules decide what an event changes
    /// in the room's state, `RoomStatePart` for what the kind keeps).
    static var kinds: [any RoomEventRule.Type] { get }
    /// The room message families it brings (each one's `received` hands
    /// the message to the feature: `node.feature(Self.self)`).
    static var messages: [any RoomMessageContent.Type] { get }
    /// Its console and page commands (beside those its kinds declare).
    static var commands: [RoomCommand] { get }

    /// This node is in the room now (a host: opened it; a joiner: admitted).
    func admitted()
    /// How often it ticks while this node is in the room (nil: never). The
    /// room ticks every 20 ms; a feature's timers are coarser, and each tick
    /// of each feature touches its object (in a process of many simulated
    /// nodes, a cache miss each): 100 ms unless it says otherwise.
    static var tickInterval: Duration? { get }
    /// Every `tickInterval`, while this node is in the room.
    func tick(now: Instant)
    /// The room changed (an accepted event, a presence timeout), after the
    /// change was reported.
    func changed(_ change: RoomChange)
    /// The session with `peer` ended, or `peer` left the room.
    func peerGone(_ peer: NodeID)
    /// Whether the feature needs this node's session with `peer` kept
    /// (`RoomNode.needsSession`: the other host of a PK…).
    func needsSession(with peer: NodeID) -> Bool
    /// This node is leaving the room, or closing it (the host): the last
    /// moment to tell anyone.
    func leaving()
    /// The lines a page that connects now needs to catch up with this
    /// feature (what it would have heard so far), oldest first.
    func current(_ names: RoomNames) -> [JSONLine]
}

extension RoomFeature {
    static var kinds: [any RoomEventRule.Type] { [] }
    static var messages: [any RoomMessageContent.Type] { [] }
    static var commands: [RoomCommand] { [] }
    static var tickInterval: Duration? { .milliseconds(100) }
    func admitted() {}
    func tick(now: Instant) {}
    func changed(_ change: RoomChange) {}
    func peerGone(_ peer: NodeID) {}
    func needsSession(with peer: NodeID) -> Bool { false }
    func leaving() {}
    func current(_ names: RoomNames) -> [JSONLine] { [] }
}

/// What a feature keeps of the events its kinds decide, inside the room's
/// state (`RoomState.part`): made on first use, gone with the room.
protocol RoomStatePart: AnyObject {
    init()
    /// With presence, about once a second: what ran out (a gift combo
    /// resting…), reported like the changes of an event.
    func expire(now: Instant) -> [RoomChange]
    /// Refuses `e` before its kind's rule sees it (a kicked author's), or nil.
    func refuses(_ e: RoomEvent) -> RoomState.RoomRejection?
    /// What a late joiner needs of this part, for the members the snapshot
    /// shows: with the rest of the content, and after everything (ordered
    /// by `RoomEvent.historyOrder` either way).
    func retained(members: [Member]) -> (content: [RoomEvent], last: [RoomEvent])
}

extension RoomStatePart {
    func expire(now: Instant) -> [RoomChange] { [] }
    func refuses(_ e: RoomEvent) -> RoomState.RoomRejection? { nil }
    func retained(members: [Member]) -> (content: [RoomEvent], last: [RoomEvent]) { ([], []) }
}

/// The room's features, registered in one table: a new feature is files
/// of its own (`LVBRoom/Features/…`) and one line here.
enum RoomFeatures {
    static let all: [any RoomFeature.Type] = [
        Moderation.self,
        Stage.self,
        Roster.self,
        RoomCount.self,
        LinkMic.self,
        Gifts.self,
        PK.self,
        Quiz.self,
        PresenceSweep.self,
    ]

    /// Every feature's event kinds, room messages and commands, in the table's order.
    static let kinds: [any RoomEventRule.Type] = all.flatMap { $0.kinds }
    static let messages: [any RoomMessageContent.Type] = all.flatMap { $0.messages }
    static let commands: [RoomCommand] = all.flatMap { $0.commands }
}

/// A room node's features, one of each registered type.
struct FeatureSet {
    private(set) var all: [any RoomFeature] = []
    private var byType: [ObjectIdentifier: any RoomFeature] = [:]
    /// The features that tick, how often, and when each is next due (nil:
    /// at the next tick): a small array the room's tick walks, touching a
    /// feature only when it is due.
    private var ticking: [(feature: any RoomFeature, every: Duration)] = []
    private var due: [Instant?] = []

    init() {}

    init(for node: RoomNode) {
        for type in RoomFeatures.all {
            let feature = type.init(node: node)
            all.append(feature)
            byType[ObjectIdentifier(type)] = feature
            if let every = type.tickInterval {
                ticking.append((feature, every))
                due.append(nil)
            }
        }
    }

    /// The features due to tick at `now` (their next tick set from it); empty, and nothing made, when none is.
    mutating func due(now: Instant) -> [any RoomFeature] {
        var out: [any RoomFeature] = []
        for i in due.indices where due[i].map({ now >= $0 }) ?? true {
            due[i] = now + ticking[i].every
            out.append(ticking[i].feature)
        }
        return out
    }

    /// (Keyed by the feature's own type, so the stored one is a `T`: no checked cast on the media path.)
    subscript<T: RoomFeature>(_ type: T.Type) -> T? { byType[ObjectIdentifier(type)].map { unsafeDowncast($0, to: T.self) } }
}

extension RoomNode {
    /// This node's instance of feature `T`.
    func feature<T: RoomFeature>(_ type: T.Type) -> T? { features[type] }

    /// What a page that connects now needs from every feature (`RoomFeature.current`).
    public func featureLines(_ names: RoomNames) -> [JSONLine] {
        guard isAdmitted else { return [] }
        return features.all.flatMap { $0.current(names) }
    }

    /// A feature's output, shown as it says (console line, JSON event, page message).
    func show(_ output: any FeatureOutput) { onOutput?(.feature(output)) }
}

/// What a feature tells the node's owner (`RoomOutput.feature`): a value of
/// the feature's own type, which says how it shows.
public protocol FeatureOutput: Sendable {
    /// Its console line, JSON event and page message, as `room` names its
    /// members now; nil: it is not shown (others act on it).
    func notice(in room: RoomNode) -> RoomNotice?
}

extension RoomNotice: FeatureOutput {
    public func notice(in room: RoomNode) -> RoomNotice? { self }
}
