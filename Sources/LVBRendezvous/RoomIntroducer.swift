import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport

/// A joiner's role towards the rendezvous that listed its room: over the
/// node's own socket (so the NAT mapping the rendezvous sees is the one the
/// host must reach), asks to be introduced to the room's host, and dials
/// the addresses the introduction gives at once, as the host dials ours
/// (hole punching). The first rendezvous to answer is enough.
public final class RoomIntroducer: LiveRole {
    private let core: TransportCore
    private let clock: Clock
    private let room: RoomID
    private let host: NodeID
    private let addresses: [PeerAddress]
    private let request: UInt32
    private var servers: Set<NodeID> = []
    private var asked: (at: Instant, times: Int)?
    private let relay: RelayClient?
    private var fallback: [PeerAddress]
    private let started: Instant
    public private(set) var introduced = false
    /// When the introduction came and the host's addresses it named: until
    /// the session is up the node asks again, and dials anew where they changed.
    private var introduction: (at: Instant, found: [PeerAddress], server: NodeID)?
    /// Introductions that named new addresses for the host (it moved).
    public private(set) var reintroduced = 0
    /// The rendezvous asked to introduce us again because the relay our
    /// session with the host ran through is gone: its answer moves the session.
    private var rerouteVia: NodeID?

    /// - Parameters:
    ///   - rendezvous: where the rendezvous servers are (dialled now).
    ///   - host: the room's host, as the rendezvous's signed announcement says.
    ///   - addresses: this node's own (local) addresses.
    ///   - relay: where relay paths come from, if the rendezvous offers its relay.
    ///   - fallback: the host's addresses to dial when no introduction comes
    ///     (the host is not connected to the rendezvous, or it does not answer).
    ///   - connected: rendezvous servers this node already holds sessions
    ///     with (a running node switching rooms): asked at once.
    public init(core: TransportCore, clock: Clock, random: RandomSource, rendezvous: [PeerAddress],
                room: RoomID, host: NodeID, addresses: [PeerAddress], relay: RelayClient? = nil, fallback: [PeerAddress] = [],
                connected: [NodeID] = []) {
        self.core = core
        self.relay = relay
        self.fallback = fallback
        started = clock.now()
        self.clock = clock
        self.room = room
        self.host = host
        self.addresses = addresses
        request = random.uint32()
        for address in rendezvous { core.connect(to: address, expecting: nil) }
        for id in connected where servers.insert(id).inserted { ask(id) }
    }

    public func handle(_ event: NodeEvent) {
        guard case .transport(let event) = event else { return }
        switch event {
        case let .hello(id, hello) where hello.role == .rendezvous:
            guard servers.insert(id).inserted else { return }
            if !introduced { return ask(id) }
            // A new session with the rendezvous our session with the host
            // runs through (it restarted): it relays only pairs it
            // introduced, so be introduced again before the session falls
            // silent. Through one that is gone (a rendezvous back under a
            // new identity): be introduced by this one, and move the session.
            if core.relay(of: host) == id {
                ask(id)
            } else if relayGone {
                rerouteVia = id
                ask(id)
            }
        case let .message(id, .rendezvous, payload) where servers.contains(id):
            guard case let .introduction(request, peer, relayed, found)? = try? RendezvousMessage.parse(payload),
                  request == self.request, peer == host else { return }
            if introduced, rerouteVia == id {
                // No addresses: the host's own session with this rendezvous is not up yet (asked again on tick).
                guard !found.isEmpty else { return }
                rerouteVia = nil
                let viaRelay = relayPath(relayed, via: id)
                core.reroute(host, to: viaRelay + found)
                return
            }
            if introduced {
                // An answer to asking again: dial only if the host moved.
                guard let last = introduction, last.server == id, !found.isEmpty, found != last.found,
                      !core.isEstablished(with: host) else { return }
                introduction?.found = found
                reintroduced += 1
                core.noteIntroduction(of: host, seenAt: found[0], by: id)
                let viaRelay = relayPath(relayed, via: id)
                core.connect(to: found + viaRelay, expecting: host, punch: true)
                return
            }
            introduced = true
            // No addresses: the host is not connected to that rendezvous; the
            // node keeps dialling the announced addresses on its own. With a
            // relay, its path races the direct addresses from the first try.
            guard !found.isEmpty else {
                dialFallback()
                return
            }
            introduction = (clock.now(), found, id)
            core.noteIntroduction(of: host, seenAt: found[0], by: id)
            let viaRelay = relayPath(relayed, via: id)
            core.connect(to: found + viaRelay, expecting: host, punch: true)
        case let .gone(id, _):
            servers.remove(id)
        default:
            break
        }
    }

    /// Asks again until introduced (a request or an answer may be lost).
    public func tick() {
        rerouteIfStillApart()
        if introduced {
            askAgainIfStillApart()
            return
        }
        let giveUpAfter = RendezvousConstants.introduceRetry * RendezvousConstants.introduceAttempts
        guard let asked else {
            // No rendezvous session came up at all.
            if clock.now() - started >= giveUpAfter {
                introduced = true
                dialFallback()
            }
            return
        }
        guard clock.now() - asked.at >= RendezvousConstants.introduceRetry else { return }
        guard asked.times < RendezvousConstants.introduceAttempts else {
            introduced = true  // given up: dial what the announcement said
            dialFallback()
            return
        }
        for id in servers { ask(id) }
    }

    /// Introduced, and still no session with the host: ask the same
    /// rendezvous again now and then, so that if either side's address has
    /// changed since (a NAT rebinding), both are introduced anew. The session
    /// itself follows later moves.
    private func askAgainIfStillApart() {
        guard let last = introduction, let asked, servers.contains(last.server) else { return }
        let now = clock.now()
        guard now - last.at < RendezvousConstants.reintroduceWindow, now - asked.at >= RendezvousConstants.reintroduceAsk else { return }
        guard !core.isEstablished(with: host) else {
            introduction = nil
            return
        }
        ask(last.server)
    }

    /// Until the session with the host runs through a live relay again (or
    /// none), asks the rendezvous that is to move it, every `introduceRetry`:
    /// it may not know the host yet (both came back to it at once).
    private func rerouteIfStillApart() {
        guard let server = rerouteVia else { return }
        guard relayGone, servers.contains(server), core.isEstablished(with: host) else {
            rerouteVia = nil
            return
        }
        if let asked, clock.now() - asked.at >= RendezvousConstants.introduceRetry { ask(server) }
    }

    /// Our session with the host runs through a relay whose node we no longer hold a session with.
    private var relayGone: Bool { core.relay(of: host).map { !core.isEstablished(with: $0) } ?? false }

    /// The relay path to the host through rendezvous `id`, when its introduction offered one.
    private func relayPath(_ relayed: Bool, via id: NodeID) -> [PeerAddress] {
        relayed ? relay.map { [$0.path(to: host, via: id)] } ?? [] : []
    }

    private func dialFallback() {
        guard !fallback.isEmpty else { return }
        core.connect(to: fallback, expecting: host)
        fallback = []
    }

    public func leave() {}
    public func stop() {}

    private func ask(_ server: NodeID) {
        asked = (clock.now(), (asked?.times ?? 0) + 1)
        let message = RendezvousMessage.introduce(request: request, room: room, addresses: addresses)
        try? core.send(message.encoded, channel: .rendezvous, to: server)
    }
}
