import LVBCore
import LVBCrypto
import LVBRoom
import LVBTransport

/// Turns transport events into output lines (runs on the node's event loop).
final class EventReporter: @unchecked Sendable {
    private let out: Output
    private let termination: Termination
    /// The node this process dialled to join (nil: hosting). Only failing to
    /// reach it ends the process; other peers (gossip neighbours) come and go.
    private let dialled: (addresses: [PeerAddress], id: NodeID?)?
    /// When the node started dialling (a joiner's wait is measured from here).
    let startedAt: Instant?
    /// A session with the dialled host came up at some point.
    private(set) var reachedHost = false

    init(out: Output, termination: Termination, dialled: (addresses: [PeerAddress], id: NodeID?)?) {
        self.out = out
        self.termination = termination
        self.dialled = dialled
        startedAt = dialled == nil ? nil : SystemClock.shared.now()
    }

    func report(_ event: TransportEvent) {
        switch event {
        case .established(let info):
            if let dialled, dialled.id == nil || dialled.id == info.id { reachedHost = true }
            var l = JSONLine(event: "session")
            l.add("peer", info.id.text)
            l.add("address", info.endpoint.description)
            l.add("initiator", info.initiatedCurrentKeys)
            out.emit(l, human: "encrypted session with \(info.id.text) at \(info.endpoint)", kind: "session")
        case .hello(let id, let hello):
            var l = JSONLine(event: "hello")
            l.add("peer", id.text)
            l.add("agent", hello.agent)
            l.add("role", hello.role.name)
            out.emit(l, human: "\(id.short) is a \(hello.role.name) running \(hello.agent)", kind: "hello", toPage: false)
        case .rtt(let id, let rtt):
            guard out.json else { return }
            var l = JSONLine(event: "rtt")
            l.add("peer", id.text)
            l.add("ms", rtt.milliseconds)
            out.emit(l, human: "", kind: "rtt")
        case .rekeyed(let id):
            var l = JSONLine(event: "rekeyed")
            l.add("peer", id.text)
            out.emit(l, human: "new session keys with \(id.short)", kind: "rekey")
        case .gone(let id, let reason):
            var l = JSONLine(event: "peer_gone")
            l.add("peer", id.text)
            l.add("reason", reason.rawValue)
            out.emit(l, human: "\(id.short) is gone (\(reason.humanText))", kind: "gone")
        case .connectFailed(let address, let id):
            guard let dialled, (id != nil && id == dialled.id) || dialled.addresses.contains(address) else {
                var l = JSONLine(event: "peer_unreachable")
                l.add("address", address.description)
                l.add("peer", id?.text)
                out.emit(l, human: "\(id?.short ?? address.description) could not be reached", kind: "gone")
                return
            }
            var l = JSONLine(event: "error")
            let message = "no answer from \(address) after \(Int(TransportConstants.rekeyAttemptTime.seconds)) s; check the address or ticket and that the host is running"
            l.add("message", message)
            out.emit(l, human: message, kind: "error")
            termination.finish(.failed("could not reach \(address)"))
        case let .moved(from, to):
            var l = JSONLine(event: "moved")
            l.add("from", from.description)
            l.add("to", to.description)
            out.emit(l, human: "this node's outside address changed from \(from) to \(to): punching every session again", kind: "moved")
        case .peerMoved(let id):
            var l = JSONLine(event: "peer_moved")
            l.add("peer", id.text)
            out.emit(l, human: "\(id.short) moved: punching its session again", kind: "moved", toPage: false)
        case let .birthday(id, met, after):
            var l = JSONLine(event: "birthday")
            l.add("peer", id.text)
            l.add("met", met)
            l.add("ms", Int(after.milliseconds))
            let human = met ? "\(id.short): birthday punch met after \(Int(after.milliseconds)) ms: the link is direct"
                : "\(id.short): birthday punch did not meet in \(Int(after.milliseconds)) ms: the link stays relayed"
            out.emit(l, human: human, kind: "moved", toPage: false)
        case .message:
            break  // the room layer consumes data channels (RoomNode.handle)
        }
    }
}

extension GoneReason {
    var humanText: String {
        switch self {
        case .silence: "silent for \(Int(TransportConstants.peerGoneTimeout.seconds)) s"
        case .bye: "left"
        case .local: "disconnected"
        case .expired: "session expired"
        case .replaced: "it took a session with another node of this identity"
        case .reset: "it no longer knew the session (restarted?)"
        case .idle: "neither side needed the session"
        }
    }
}

/// Transport and room counters as JSON objects.
enum StatsJSON {
    /// The established sessions by path: straight to the peer, or through a relay.
    static func sessions(_ peers: [PeerInfo]) -> String {
        let up = peers.filter(\.established)
        let relayed = up.filter(\.relayed).count
        return "{\"direct\":\(up.count - relayed),\"relayed\":\(relayed)}"
    }

    static func encode(room r: RoomNode) -> String {
        let g = r.gossip.stats
        let fields: [(String, Int)] = [
            ("members", r.state?.count ?? 0), ("likes", Int(r.state?.likeTotal ?? 0)),
            ("events_delivered", g.delivered), ("event_copies", g.eventCopiesReceived), ("duplicates", g.duplicates),
            ("invalid", g.invalid), ("rejected", r.rejectedEvents), ("grafts", g.grafts), ("repairs_sent", g.repairsSent),
            ("neighbours", r.gossip.active.count), ("dropped_media", r.droppedMedia), ("passes_wanted", r.passesWanted),
            ("pk_refused", r.pkRefused),
        ]
        return "{" + fields.map { "\(JSONLine.quote($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    static func encode(_ s: TransportStats) -> String {
        let fields: [(String, Int)] = [
            ("datagrams_in", s.datagramsIn), ("bytes_in", s.bytesIn), ("bytes_in_via_rendezvous", s.bytesInViaRendezvous), ("datagrams_out", s.datagramsOut), ("bytes_out", s.bytesOut),
            ("handshakes", s.handshakesCompleted), ("messages_in", s.messagesIn), ("messages_out", s.messagesOut),
            ("keepalives_in", s.keepalivesIn), ("cookie_replies", s.cookieRepliesSent), ("dropped", s.droppedTotal),
            ("dropped_malformed", s.droppedMalformed), ("dropped_mac1", s.droppedMAC1), ("dropped_decrypt", s.droppedDecrypt),
            ("dropped_replay", s.droppedReplay), ("dropped_unknown_index", s.droppedUnknownIndex),
            ("dropped_inbound_loss", s.droppedInbound),
            ("introductions_asked", s.introductionsAsked), ("introductions_made", s.introductionsMade),
            ("introductions_taken", s.introductionsTaken), ("relayed_datagrams", s.relayedDatagrams),
            ("relayed_bytes", s.relayedBytes), ("relay_refused", s.relayRefused),
            ("relay_path_out", s.relayPathDatagramsOut), ("relay_path_in", s.relayPathDatagramsIn),
            ("unknown_sessions_sent", s.unknownSessionsSent), ("sessions_reset", s.sessionsReset),
            ("dropped_unknown_session", s.droppedUnknownSession),
            ("direct_probes", s.directProbes), ("punches_asked", s.punchesAsked), ("repunches", s.repunches), ("punches_resumed", s.punchesResumed),
            ("sessions_released", s.sessionsReleased), ("sessions_closed_idle", s.sessionsClosedIdle), ("address_checks", s.addressChecks), ("address_changes", s.addressChanges),
            ("sockets_rebound", s.socketsRebound), ("held_after_move", s.heldAfterMove),
            ("member_relay_asks", s.memberRelayAsks), ("member_relay_moves", s.memberRelayMoves),
            ("birthday_offers", s.birthdayOffers), ("birthday_runs", s.birthdayRuns), ("birthday_spares", s.birthdaySpares), ("birthday_met", s.birthdayMet),
            ("birthday_failed", s.birthdayFailed), ("birthday_declined", s.birthdayDeclined), ("birthday_probes", s.birthdayProbes),
        ]
        return "{" + fields.map { "\(JSONLine.quote($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }
}
