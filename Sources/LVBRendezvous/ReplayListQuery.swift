import LVBCore
import LVBCrypto
import LVBReplay
import LVBTransport
import NIOCore
import NIOPosix

/// Asks a rendezvous about the replays its peers hold, over a short-lived
/// session of its own (as `RendezvousQuery`): a page of the list, or where
/// one replay's holders are.
public enum ReplayListQuery {
    public enum Answer: Sendable {
        case page(total: Int, replays: [ReplayListMessage.Listed])
        case holders(ReplayID, [ReplayListMessage.Holder])
    }

    public static func list(_ rendezvous: [PeerAddress], page: Int, timeout: Duration) async throws(RendezvousQuery.Failure) -> Answer {
        try await ask(rendezvous, timeout: timeout, .list(request: 1, page: UInt16(clamping: page)))
    }

    public static func find(_ id: ReplayID, _ rendezvous: [PeerAddress], timeout: Duration) async throws(RendezvousQuery.Failure) -> Answer {
        try await ask(rendezvous, timeout: timeout, .find(request: 1, id))
    }

    private static func ask(_ rendezvous: [PeerAddress], timeout: Duration, _ question: ReplayListMessage) async throws(RendezvousQuery.Failure) -> Answer {
        let state = ReplayQueryState()
        let udp: UDPNode
        do {
            let any = rendezvous.first.map { $0.isIPv4 ? PeerAddress.ipv4(0, 0, 0, 0, port: 0) : PeerAddress.anyDualStack(port: 0) }
            udp = try await UDPNode.start(identity: Identity.generate(), listen: any ?? .anyDualStack(port: 0), config: TransportConfig(),
                                          group: MultiThreadedEventLoopGroup.singleton) { event in
                switch event {
                case let .hello(id, hello) where hello.role == .rendezvous && state.asked.insert(id).inserted:
                    state.send?(question.bytes, id)
                case let .message(_, .replay, payload):
                    guard state.answer == nil, let m = try? ReplayListMessage.parse(payload) else { return }
                    switch m {
                    case let .listed(_, _, total, part, parts, replays):
                        state.parts[part] = replays
                        if state.parts.count == Int(parts) {
                            state.answer = .page(total: Int(total), replays: (0..<parts).flatMap { state.parts[$0] ?? [] })
                        }
                    case let .found(_, id, holders):
                        state.answer = .holders(id, holders)
                    default:
                        break
                    }
                default:
                    break
                }
            }
        } catch {
            throw .bind(error)
        }
        _ = try? await udp.submit { core in
            state.send = { bytes, id in try? core.send(bytes, channel: .replay, to: id) }
            for address in rendezvous { core.connect(to: address, expecting: nil) }
        }
        let clock = SystemClock.shared
        let deadline = clock.now() + timeout
        var answer: Answer?
        while clock.now() < deadline {
            answer = try? await udp.submit { _ in state.answer }
            if answer != nil { break }
            try? await Task.sleep(for: .milliseconds(20))
        }
        await udp.close()
        guard let answer else { throw .noAnswer(rendezvous.first ?? .ipv4(0, 0, 0, 0, port: 0), timeout) }
        return answer
    }
}

/// The query's state, touched on the loop only.
private final class ReplayQueryState: @unchecked Sendable {
    var send: (([UInt8], NodeID) -> Void)?
    var asked: Set<NodeID> = []
    var parts: [UInt8: [ReplayListMessage.Listed]] = [:]
    var answer: ReplayListQuery.Answer?
}
