import LVBCore
import LVBCrypto
import LVBTransport

/// What a node that holds replays runs: the server that answers players'
/// requests, and the announcer that tells each rendezvous what it holds.
/// A host (as a role of its live node) and a node of replays alone
/// (`join --keep-replays`, `replays --serve`) run the same. Sans-IO.
public final class ReplayHolding {
    public let server: ReplayServer
    public let announcer: ReplayAnnouncer

    public init(library: ReplayLibrary, core: TransportCore, clock: Clock, addresses: [PeerAddress]) {
        server = ReplayServer(library: library, clock: clock) { peer, bytes in try? core.send(bytes, channel: .replay, to: peer) }
        announcer = ReplayAnnouncer(library: library, core: core, clock: clock)
        announcer.addresses = addresses
    }

    /// A transport event: a rendezvous that comes up hears what is held; a
    /// request goes to the server. True when the event was a request.
    @discardableResult
    public func handle(_ event: TransportEvent) -> Bool {
        announcer.handle(event)
        guard case let .message(peer, .replay, payload) = event, ReplayMessage.isRequest(payload) else { return false }
        server.receive(payload, from: peer)
        return true
    }

    public func tick() { announcer.tick() }
}
