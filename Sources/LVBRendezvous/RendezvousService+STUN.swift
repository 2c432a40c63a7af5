import LVBCore
import LVBTransport

/// STUN on the rendezvous's two ports: the session port (beside the
/// sessions, through the transport's side channel) and the alternate port
/// (STUN Binding only, RFC 5780 §6.1), each source IP within one budget.
extension RendezvousService {
    /// Answers STUN on `alternatePort` too, at the primary's IP:
    /// `sendFromAlternate` writes to that port's socket. Call before the
    /// alternate socket delivers anything.
    public func useAlternatePort(_ alternatePort: UInt16, primary: PeerAddress, sendFromAlternate: @escaping ([UInt8], PeerAddress) -> Void) {
        stun = STUNResponder(primary: primary, alternatePort: alternatePort)
        self.sendFromAlternate = sendFromAlternate
    }

    /// A datagram on the session port: STUN is answered (from this port or,
    /// asked to change port, from the alternate one); anything else is the
    /// session layer's.
    func stunOnPrimary(_ bytes: ArraySlice<UInt8>, from source: PeerAddress) -> SideChannelVerdict {
        guard STUNMessage.looksLikeSTUN(bytes) else { return .notMine }
        guard let (reply, otherPort) = stunAnswer(bytes, from: source, on: .primary) else { return .consumed }
        guard otherPort else { return .reply(reply) }
        sendFromAlternate?(reply, source)
        return .consumed
    }

    /// A datagram on the alternate port (STUN Binding only; anything else
    /// is counted and dropped). An answer asked from the other port goes
    /// out of the session port.
    public func receiveOnAlternate(_ bytes: ArraySlice<UInt8>, from source: PeerAddress) {
        guard STUNMessage.looksLikeSTUN(bytes) else {
            stats.alternateNotSTUN += 1
            return
        }
        guard let (reply, otherPort) = stunAnswer(bytes, from: source, on: .alternate) else { return }
        if otherPort { core.sendRaw(reply, to: source) } else { sendFromAlternate?(reply, source) }
    }

    /// The answer to one STUN datagram and whether it goes out from the
    /// other port; nil when it is over its source's rate or gets no answer.
    private func stunAnswer(_ bytes: ArraySlice<UInt8>, from source: PeerAddress, on port: STUNPort) -> (reply: [UInt8], otherPort: Bool)? {
        guard stunSources.allow(source.host, now: clock.now()) else {
            stats.rateLimited += 1
            return nil
        }
        switch stun.answer(bytes, from: source, on: port) {
        case .notSTUN:
            stats.stunDropped += 1
            return nil
        case .answer(let reply):
            stats.stunAnswered += 1
            return (reply, false)
        case .answerFromOtherPort(let reply):
            stats.stunAnswered += 1
            stats.stunOtherPort += 1
            return (reply, true)
        case .dropped(let why):
            stats.stunDropped += 1
            log.debug("STUN from \(source) on the \(port == .primary ? "session" : "alternate") port dropped: \(why)")
            return nil
        }
    }
}
