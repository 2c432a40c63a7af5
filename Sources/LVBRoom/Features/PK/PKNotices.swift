import LVBCore
import LVBCrypto
import LVBGossip

/// How PK's signalling shows (the other host is named by its id: its
/// nickname is not this room's). The battle itself shows as the room's
/// own PK events (`pk_started`, `pk_score`, `pk_ended`), on every node alike.
extension PKOutput: FeatureOutput {
    public func notice(in room: RoomNode) -> RoomNotice? {
        switch self {
        case let .requested(other, host, minutes, title):
            let named = title.isEmpty ? "room \(other.text)" : "«\(title)» (room \(other.text))"
            return RoomNotice(Self.requestLine(room: other, host: host, minutes: minutes, title: title),
                              human: "\(named) asks for a \(minutes)-minute PK: /pk accept or /pk reject [reason]", tag: "pk")
        case let .asking(other, title, minutes):
            return RoomNotice(Self.askingLine(room: other, title: title, minutes: minutes),
                              human: "asked \(title.isEmpty ? "room \(other.text)" : "«\(title)»") for a \(minutes)-minute PK; /pk end withdraws it",
                              tag: "pk")
        case let .rejected(other, reason):
            var l = JSONLine(event: "pk_rejected")
            l.add("room", other.text)
            l.add("title", room.pkOtherTitle)
            l.add("reason", reason)
            return RoomNotice(l, human: "room \(other.text) said no to the PK\(reason.isEmpty ? "" : ": \(reason)")", tag: "pk")
        case .withdrawn(let other):
            var l = JSONLine(event: "pk_withdrawn")
            l.add("room", other.text)
            l.add("title", room.pkOtherTitle)
            return RoomNotice(l, human: "the PK request with room \(other.text) is off (withdrawn or unanswered)", tag: "pk")
        case .started, .ended:
            return nil
        case .refused(let why):
            var l = JSONLine(event: "pk_refused")
            l.add("message", why)
            return RoomNotice(l, human: "", tag: "pk")
        }
    }

    /// `pk_request`: another room's host asks this one for a PK.
    static func requestLine(room: RoomID, host: NodeID, minutes: UInt8, title: String) -> JSONLine {
        var l = JSONLine(event: "pk_request")
        l.add("room", room.text)
        l.add("host", host.text)
        l.add("title", title)
        l.add("minutes", Int(minutes))
        return l
    }

    /// `pk_asking`: this host's request went out.
    static func askingLine(room: RoomID, title: String, minutes: UInt8) -> JSONLine {
        var l = JSONLine(event: "pk_asking")
        l.add("room", room.text)
        l.add("title", title)
        l.add("minutes", Int(minutes))
        return l
    }
}

extension PK {
    /// A page that connects now: the battle that runs (its timer, both
    /// scores), and a request waiting for this host's answer or the other's.
    func current(_ names: RoomNames) -> [JSONLine] {
        var lines = node.pkBattleNotice().map { [$0.line] } ?? []
        switch phase {
        case let .asked(_, other, host, minutes, _):
            lines.append(PKOutput.requestLine(room: other, host: host, minutes: minutes, title: otherTitle))
        case let .asking(_, other, _, minutes, _):
            lines.append(PKOutput.askingLine(room: other, title: otherTitle, minutes: minutes))
        case .idle, .battle:
            break
        }
        return lines
    }
}
