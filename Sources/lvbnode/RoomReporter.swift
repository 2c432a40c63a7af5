import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport

/// Turns room outputs into output lines, and removals into the node's exit.
final class RoomReporter: @unchecked Sendable {
    private let out: Output
    private let termination: Termination
    weak var room: RoomNode?
    /// Room switches so far (a viewer browsing).
    var switches = 0
    /// Who is present, or how they show, changed (the studio page's viewer list follows).
    var onMembersChanged: (() -> Void)?
    /// This node got into the room (host: opened it) at some point.
    private(set) var admitted = false

    init(out: Output, termination: Termination) {
        self.out = out
        self.termination = termination
    }

    func nick(_ id: NodeID) -> String {
        room?.state?.profile(of: id)?.nickname ?? id.short
    }

    var names: RoomNames { RoomNames { [weak self] in self?.nick($0) ?? $0.short } }

    private func line(_ event: String, _ id: NodeID) -> JSONLine { names.line(event, id) }

    func report(_ output: RoomOutput) {
        switch output {
        case .admitted(let room):
            admitted = true
            var l = JSONLine(event: "admitted")
            l.add("room", room.text)
            if let node = self.room, let address = node.core.endpoint(of: node.host) {
                l.add("host", node.host.text)
                l.add("ticket", JoinTicket(host: node.host, addresses: [address], fields: [TicketField.room: room.bytes]).text)
            }
            out.emit(l, human: "in room \(room.text)", kind: "room")
        case .denied(let reason):
            termination.finish(.failed("the host refused to admit us: \(reason)"))
        case .removed(let reason):
            switch reason {
            case .roomClosed: termination.finish(.roomClosed)
            case .kicked: termination.finish(.removed("you were kicked from the room"))
            case .signedInElsewhere:
                if let me = room?.core.nodeID { out.emit(line("signed_in_elsewhere", me), human: "this identity joined the room from another node", kind: "session") }
                termination.finish(.removed("signed in elsewhere: this identity joined the room from another node"))
            }
        case .change(let change):
            report(change)
            switch change {
            case .joined, .left, .kicked, .stage, .profile, .signedInElsewhere, .counted: onMembersChanged?()
            default: break
            }
        case .linkMic(let output):
            report(output)
        case .pk(let output):
            report(output)
        case .notice(let notice):
            out.emit(notice.line, human: notice.human, kind: notice.tag)
        }
    }

    private func report(_ output: LinkMicOutput) {
        switch output {
        case let .request(id, message):
            let l = requestLine(id, message)
            let said = message.isEmpty ? "" : ": \(message)"
            out.emit(l, human: "\(nick(id)) asks to go on stage\(said) (/accept \(nick(id)) or /reject \(nick(id)))", kind: "linkmic")
        case .expired(let id):
            let mine = id == room?.core.nodeID
            out.emit(line("linkmic_expired", id),
                     human: mine ? "the host did not answer your link-mic request" : "\(nick(id))'s link-mic request expired", kind: "linkmic")
        case .accepted:
            var l = JSONLine(event: "linkmic_accepted")
            if let host = room?.host { l.add("host", host.text) }
            out.emit(l, human: "the host accepted: you are on stage (/hangup to leave it)", kind: "linkmic")
        case .rejected(let reason):
            var l = JSONLine(event: "linkmic_rejected")
            l.add("reason", reason)
            out.emit(l, human: "the host declined your link-mic request\(reason.isEmpty ? "" : ": " + reason)", kind: "linkmic")
        case .ended(let reason):
            // The room-wide linkmic_ended follows from the host's stage event.
            var l = JSONLine(event: "linkmic_off")
            l.add("reason", reason.description)
            out.emit(l, human: "you are off stage (\(reason.description.replacingUnderscores()))", kind: "linkmic")
        case let .refused(id, why):
            var l = JSONLine(event: "linkmic_refused")
            l.add("from", id.text)
            l.add("why", why)
            out.emit(l, human: "ignored a link-mic message from \(id.short): \(why)", kind: "linkmic")
        }
    }

    /// A change shows as its event kind describes it (`RoomEvents.notice`).
    private func report(_ change: RoomChange) {
        guard let notice = RoomEvents.notice(for: change, names: names) else { return }
        out.emit(notice.line, human: notice.human, kind: notice.tag)
    }

    /// `pk_request`: another room's host asks this one for a PK.
    func pkRequestLine(room: RoomID, host: NodeID, minutes: UInt8, title: String) -> JSONLine {
        var l = JSONLine(event: "pk_request")
        l.add("room", room.text)
        l.add("host", host.text)
        l.add("title", title)
        l.add("minutes", Int(minutes))
        return l
    }

    /// `pk_asking`: this host's request went out.
    func pkAskingLine(room: RoomID, title: String, minutes: UInt8) -> JSONLine {
        var l = JSONLine(event: "pk_asking")
        l.add("room", room.text)
        l.add("title", title)
        l.add("minutes", Int(minutes))
        return l
    }

    /// PK signalling (the other host is named by its id; its nickname is not this room's).
    func report(_ output: PKOutput) {
        switch output {
        case let .requested(room, host, minutes, title):
            let l = pkRequestLine(room: room, host: host, minutes: minutes, title: title)
            let named = title.isEmpty ? "room \(room.text)" : "«\(title)» (room \(room.text))"
            out.emit(l, human: "\(named) asks for a \(minutes)-minute PK: /pk accept or /pk reject [reason]", kind: "pk")
        case let .asking(room, title, minutes):
            let l = pkAskingLine(room: room, title: title, minutes: minutes)
            out.emit(l, human: "asked \(title.isEmpty ? "room \(room.text)" : "«\(title)»") for a \(minutes)-minute PK; /pk end withdraws it", kind: "pk")
        case let .rejected(room, reason):
            var l = JSONLine(event: "pk_rejected")
            l.add("room", room.text)
            l.add("title", self.room?.pkOtherTitle)
            l.add("reason", reason)
            out.emit(l, human: "room \(room.text) said no to the PK\(reason.isEmpty ? "" : ": \(reason)")", kind: "pk")
        case .withdrawn(let room):
            var l = JSONLine(event: "pk_withdrawn")
            l.add("room", room.text)
            l.add("title", self.room?.pkOtherTitle)
            out.emit(l, human: "the PK request with room \(room.text) is off (withdrawn or unanswered)", kind: "pk")
        case .started, .ended:
            // The room's own PK events (pk_started, pk_score, pk_ended) say it, on every node alike.
            break
        case .refused(let why):
            var l = JSONLine(event: "pk_refused")
            l.add("message", why)
            out.emit(l, human: "", kind: "pk")
        }
    }

    /// A `linkmic_request` event: `id` asks to go on stage.
    func requestLine(_ id: NodeID, _ message: String) -> JSONLine {
        var l = line("linkmic_request", id)
        l.add("message", message)
        return l
    }
}
