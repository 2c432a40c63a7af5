import LVBCore
import LVBCrypto

/// How link-mic's signalling shows on the console, in `--json` and on the page.
extension LinkMicOutput: FeatureOutput {
    public func notice(in room: RoomNode) -> RoomNotice? {
        let names = room.names
        switch self {
        case let .request(id, message):
            let said = message.isEmpty ? "" : ": \(message)"
            return RoomNotice(Self.requestLine(id, message, names),
                              human: "\(names(id)) asks to go on stage\(said) (/accept \(names(id)) or /reject \(names(id)))", tag: "linkmic")
        case .expired(let id):
            let mine = id == room.core.nodeID
            return RoomNotice(names.line("linkmic_expired", id),
                              human: mine ? "the host did not answer your link-mic request" : "\(names(id))'s link-mic request expired", tag: "linkmic")
        case .accepted:
            var l = JSONLine(event: "linkmic_accepted")
            l.add("host", room.host.text)
            return RoomNotice(l, human: "the host accepted: you are on stage (/hangup to leave it)", tag: "linkmic")
        case .rejected(let reason):
            var l = JSONLine(event: "linkmic_rejected")
            l.add("reason", reason)
            return RoomNotice(l, human: "the host declined your link-mic request\(reason.isEmpty ? "" : ": " + reason)", tag: "linkmic")
        case .ended(let reason):
            // The room-wide linkmic_ended follows from the host's stage event.
            var l = JSONLine(event: "linkmic_off")
            l.add("reason", reason.description)
            return RoomNotice(l, human: "you are off stage (\(reason.description.replacingUnderscores()))", tag: "linkmic")
        case let .refused(id, why):
            var l = JSONLine(event: "linkmic_refused")
            l.add("from", id.text)
            l.add("why", why)
            return RoomNotice(l, human: "ignored a link-mic message from \(id.short): \(why)", tag: "linkmic")
        }
    }

    /// A `linkmic_request` event: `id` asks to go on stage.
    static func requestLine(_ id: NodeID, _ message: String, _ names: RoomNames) -> JSONLine {
        var l = names.line("linkmic_request", id)
        l.add("message", message)
        return l
    }
}

extension LinkMic {
    /// A page that connects now: the host's queue of requests, as they came.
    func current(_ names: RoomNames) -> [JSONLine] {
        node.linkMicQueue.map { LinkMicOutput.requestLine($0.id, $0.message, names) }
    }
}
