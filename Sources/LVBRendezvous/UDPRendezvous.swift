import LVBCore
import LVBCrypto
import LVBGossip
import LVBTransport
import NIOCore
import NIOPosix

/// The rendezvous role over a real UDP socket: sessions with hosts and
/// viewers, STUN on the same port (and on an alternate port, STUN only),
/// the registry's timers on the loop.
public final class UDPRendezvous: @unchecked Sendable {
    public let udp: UDPNode
    /// The alternate STUN port's bound address, if it has one.
    public var alternateAddress: PeerAddress? { alternate?.localAddress }
    private var alternate: AlternatePort?
    /// Set once on the loop during `start`; read only on the loop.
    public private(set) var service: RendezvousService!
    private var ticker: RepeatedTask?

    private init(udp: UDPNode) { self.udp = udp }

    /// Binds `listen` and starts answering. `onEvent` sees every session event on the loop.
    /// With `alternatePort` (not 0), STUN is answered on that port of the
    /// same IP too, and CHANGE-REQUEST's change-port is honoured (RFC 5780).
    public static func start(identity: Identity, listen: PeerAddress, agent: String, relayKbps: Int = 0, alternatePort: UInt16? = nil,
                             onEvent: @escaping (TransportEvent) -> Void) async throws -> UDPRendezvous {
        var config = TransportConfig()
        config.hello = Hello(agent: agent, role: .rendezvous)
        // The same budget relays members' pairs it introduced (introduce channel).
        config.relayKbps = relayKbps
        let box = ServiceBox()
        let udp = try await UDPNode.start(identity: identity, listen: listen, config: config,
                                          group: MultiThreadedEventLoopGroup.singleton) { event in
            onEvent(event)
            box.service?.handle(event)
        }
        let node = UDPRendezvous(udp: udp)
        try await udp.submit { core in
            let service = RendezvousService(core: core, clock: SystemClock.shared, relayKbps: relayKbps)
            box.service = service
            node.service = service
        }
        if let alternatePort, alternatePort != 0 {
            do {
                let alternate = try await AlternatePort.bind(udp.localAddress, port: alternatePort, on: udp.eventLoop) { bytes, source in
                    box.service?.receiveOnAlternate(bytes, from: source)
                }
                node.alternate = alternate
                try await udp.submit { _ in
                    box.service?.useAlternatePort(alternate.localAddress.port, primary: udp.localAddress) { reply, target in
                        alternate.send(reply, to: target)
                    }
                }
            } catch {
                await udp.close()
                throw error
            }
        }
        node.ticker = udp.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in box.service?.tick() }
        return node
    }

    /// Runs `body` with the service and the transport on the loop.
    public func submit<T>(_ body: @escaping (RendezvousService, TransportCore) throws -> T) async throws -> T {
        try await udp.submit { [self] core in try body(service, core) }
    }

    /// Says bye to every session and closes the socket.
    public func close() async {
        ticker?.cancel()
        await udp.close()
        await alternate?.close()
    }
}

private final class ServiceBox: @unchecked Sendable {
    var service: RendezvousService?
}

/// Asks a rendezvous one question over a short-lived session of its own:
/// the node dials it (Noise XX: its key is learnt, not needed), asks, and
/// returns the first complete answer, or throws after `timeout`.
public enum RendezvousQuery {
    public enum Failure: Error, CustomStringConvertible {
        case bind(Error)
        case noAnswer(PeerAddress, Duration)
        public var description: String {
            switch self {
            case .bind(let e): "cannot open a UDP socket: \(e)"
            case let .noAnswer(address, wait): "no answer from the rendezvous at \(address) within \(Int(wait.seconds)) s; check the address and that it is running"
            }
        }
    }

    /// The first answer from any of `rendezvous` (asked all at once).
    public static func ask(_ rendezvous: [PeerAddress], timeout: Duration,
                           _ question: @escaping @Sendable (RendezvousClient, NodeID) -> Void) async throws(Failure) -> RendezvousClient.Answer {
        let (answer, _) = try await run(rendezvous, timeout: timeout, thumbnails: false, question)
        guard let answer else { throw .noAnswer(rendezvous.first ?? .ipv4(0, 0, 0, 0, port: 0), timeout) }
        return answer
    }

    /// The thumbnails the first of `rendezvous` to come up keeps of these
    /// rooms (a replay's is its room's, signed by the host), each verified
    /// against the host's key, asked one at a time at `thumbnailRequestPace`;
    /// whatever came by `timeout`.
    public static func thumbnails(of rooms: [(room: RoomID, host: NodeID)], _ rendezvous: [PeerAddress],
                                  timeout: Duration) async throws(Failure) -> [RoomID: RoomThumbnail] {
        try await run(rendezvous, timeout: timeout, thumbnails: true, queue: rooms, nil).1
    }

    /// Page `page` (from 0) of the list from the first of `rendezvous` to
    /// answer, and then the thumbnail of each room on it that has one
    /// (verified against its host's key), asked one at a time at
    /// `thumbnailRequestPace`; whatever came by `timeout` after the list.
    public static func listWithThumbnails(_ rendezvous: [PeerAddress], page: Int,
                                          timeout: Duration) async throws(Failure) -> (RendezvousClient.Answer, [RoomID: RoomThumbnail]) {
        let (answer, pictures) = try await run(rendezvous, timeout: timeout, thumbnails: true) { client, server in client.list(page: page, from: server) }
        guard let answer else { throw .noAnswer(rendezvous.first ?? .ipv4(0, 0, 0, 0, port: 0), timeout) }
        return (answer, pictures)
    }

    /// Asks `question` (if any) of the first rendezvous to come up and then,
    /// with `thumbnails`, the thumbnails of `queue` and of the rooms the
    /// answer lists. Fails when no rendezvous came up.
    private static func run(_ rendezvous: [PeerAddress], timeout: Duration, thumbnails: Bool, queue: [(room: RoomID, host: NodeID)] = [],
                            _ question: (@Sendable (RendezvousClient, NodeID) -> Void)?) async throws(Failure) -> (RendezvousClient.Answer?, [RoomID: RoomThumbnail]) {
        let identity = Identity.generate()
        let state = QueryState()
        let udp: UDPNode
        do {
            let any = rendezvous.first.map { $0.isIPv4 ? PeerAddress.ipv4(0, 0, 0, 0, port: 0) : PeerAddress.anyDualStack(port: 0) }
            udp = try await UDPNode.start(identity: identity, listen: any ?? .anyDualStack(port: 0), config: TransportConfig(),
                                          group: MultiThreadedEventLoopGroup.singleton) { event in
                guard let client = state.client else { return }
                if case let .hello(id, hello) = event, hello.role == .rendezvous, state.asked.insert(id).inserted {
                    state.server = state.server ?? id
                    question?(client, id)
                }
                client.handle(event)
            }
        } catch {
            throw .bind(error)
        }
        _ = try? await udp.submit { core in
            let client = RendezvousClient(core: core, clock: SystemClock.shared, random: SodiumRandom.shared)
            client.onAnswer = { answer in
                switch answer {
                case let .thumbnail(room, thumbnail):
                    state.waiting.remove(room)
                    if let thumbnail { state.thumbnails[room] = thumbnail }
                default:
                    guard state.answer == nil else { return }
                    state.answer = answer
                    if thumbnails, case let .page(_, _, rooms) = answer { state.queue += rooms.map { ($0.room, $0.host) } }
                }
            }
            state.client = client
            state.queue = queue
            for address in rendezvous { core.connect(to: address, expecting: nil) }
        }
        let clock = SystemClock.shared
        var deadline = clock.now() + timeout
        var answer: RendezvousClient.Answer?
        var listed = false
        while clock.now() < deadline {
            let (got, done) = (try? await udp.submit { _ -> (RendezvousClient.Answer?, Bool) in
                state.client?.tick()
                // One thumbnail request at a time, paced within the rendezvous's request rate.
                if let server = state.server, !state.queue.isEmpty,
                   state.lastAsk.map({ clock.now() - $0 >= RendezvousConstants.thumbnailRequestPace }) ?? true {
                    let room = state.queue.removeFirst()
                    state.lastAsk = clock.now()
                    state.waiting.insert(room.room)
                    state.client?.thumbnail(room.room, host: room.host, have: 0, from: server)
                }
                return (state.answer, state.server != nil && state.queue.isEmpty && state.waiting.isEmpty)
            }) ?? (nil, false)
            if let got, !listed {
                answer = got
                listed = true
                if thumbnails { deadline = clock.now() + timeout }
            }
            if (answer != nil || question == nil) && done { break }
            try? await Task.sleep(for: .milliseconds(20))
        }
        let (kept, reached) = (try? await udp.submit { _ in (state.thumbnails, state.server != nil) }) ?? ([:], false)
        await udp.close()
        guard reached else { throw .noAnswer(rendezvous.first ?? .ipv4(0, 0, 0, 0, port: 0), timeout) }
        return (answer, kept)
    }
}

/// The query's state, touched on the loop only.
private final class QueryState: @unchecked Sendable {
    var client: RendezvousClient?
    var asked: Set<NodeID> = []
    var answer: RendezvousClient.Answer?
    /// The first rendezvous to come up: thumbnails are asked there.
    var server: NodeID?
    var queue: [(room: RoomID, host: NodeID)] = []
    var waiting: Set<RoomID> = []
    var lastAsk: Instant?
    var thumbnails: [RoomID: RoomThumbnail] = [:]
}
