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

    private func line(_ event: String, _ id: NodeID) -> JSONLine {
        var l = JSONLine(event: event)
        l.add("id", id.text)
        l.add("nick", nick(id))
        return l
    }

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
            case .joined, .left, .kicked, .stage, .profile, .signedInElsewhere: onMembersChanged?()
            default: break
            }
        case .linkMic(let output):
            report(output)
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

    private func report(_ change: RoomChange) {
        switch change {
        case let .joined(id, role):
            var l = line("joined", id)
            l.add("role", role.name)
            out.emit(l, human: "\(nick(id)) joined\(role == .host ? " (host)" : "")", kind: "join")
        case let .left(id, reason):
            var l = line("left", id)
            let why = ["left", "timeout", "signed_in_elsewhere", "kicked"][Int(min(reason, 3))]
            l.add("reason", why)
            out.emit(l, human: "\(nick(id)) left (\(why.replacingUnderscores()))", kind: "leave")
        case .chat(let e):
            guard let text = e.body.as(ChatLine.self)?.text else { return }
            var l = line("chat", e.author)
            l.add("text", text)
            l.add("time", Int(e.timestamp))
            out.emit(l, human: "\(nick(e.author)): \(text)", kind: "chat")
        case .danmaku(let e):
            guard let (text, color, lane) = e.body.as(BulletComment.self).map({ ($0.text, $0.color, $0.lane) }) else { return }
            var l = line("danmaku", e.author)
            l.add("text", text)
            l.add("color", "#" + String.hex6(color))
            l.add("lane", Int(lane))
            out.emit(l, human: "\(nick(e.author)) ≫ \(text)", kind: "danmaku")
        case let .like(author, authorTotal, roomTotal):
            var l = line("like", author)
            l.add("count", Int(authorTotal))
            l.add("total", Int(roomTotal))
            out.emit(l, human: "\(nick(author)) likes this (room total \(roomTotal))", kind: "like")
        case let .profile(id, p):
            var l = line("profile", id)
            l.add("avatar", p.avatar)
            l.add("gender", p.gender.map { Self.genders[Int(min($0, 3))] })
            l.add("location", p.location)
            out.emit(l, human: "\(id.short) is now \(p.nickname ?? id.short)", kind: "profile")
        case .roomInfo(let info):
            var l = JSONLine(event: "room_info")
            l.add("title", info.title)
            l.add("cover", info.cover)
            l.add("location", info.location)
            if let s = info.startedAt { l.add("started_at", Int(s)) }
            out.emit(l, human: "room: \(info.title ?? "(untitled)")", kind: "room")
        case .kicked(let id):
            out.emit(line("kicked", id), human: "\(nick(id)) was kicked by the host", kind: "kick")
        case let .muted(id, muted):
            var l = line("muted", id)
            l.add("muted", muted)
            out.emit(l, human: "\(nick(id)) was \(muted ? "muted" : "unmuted") by the host", kind: "mute")
        case let .stage(id, true, _):
            out.emit(line("linkmic_started", id), human: "\(nick(id)) is on stage (co-host)", kind: "linkmic")
        case let .stage(id, false, reason):
            var l = line("linkmic_ended", id)
            l.add("reason", reason?.description ?? "ended")
            out.emit(l, human: "\(nick(id)) left the stage (\((reason?.description ?? "ended").replacingUnderscores()))", kind: "linkmic")
        case .roomClosed:
            out.emit(JSONLine(event: "room_closed"), human: "the host closed the room", kind: "closed")
        case let .signedInElsewhere(id, _, _):
            out.emit(line("signed_in_elsewhere", id), human: "\(nick(id)) signed in from another node", kind: "session")
        }
    }

    static let genders = ["unspecified", "female", "male", "other"]

    /// The `viewers` event: everyone present now.
    func viewers() {
        guard let (line, human) = viewersLine() else { return }
        out.emit(line, human: human, kind: "viewers")
    }

    /// A `linkmic_request` event: `id` asks to go on stage.
    func requestLine(_ id: NodeID, _ message: String) -> JSONLine {
        var l = line("linkmic_request", id)
        l.add("message", message)
        return l
    }

    /// The `viewers` event and its readable form (nil before the room has a state).
    func viewersLine() -> (JSONLine, String)? {
        guard let state = room?.state else { return nil }
        let members = state.members.sorted { $0.joinedAt < $1.joinedAt }
        let list = "[" + members.map { m in
            var o = JSONLine()
            o.add("id", m.id.text)
            o.add("nick", nick(m.id))
            o.add("role", m.role.name)
            o.add("cohost", m.onStage)
            o.add("muted", state.isMuted(m.id))
            return o.text
        }.joined(separator: ",") + "]"
        var l = JSONLine(event: "viewers")
        l.add("count", members.count)
        l.add("likes", Int(state.likeTotal))
        l.addRaw("viewers", list)
        let human = "\(members.count) in the room: " + members.map { nick($0.id) + ($0.role == .host ? " (host)" : $0.onStage ? " (co-host)" : "") }.joined(separator: ", ")
        return (l, human)
    }
}

extension String {
    static func hex6(_ v: UInt32) -> String {
        let hex = String(v, radix: 16)
        return String(repeating: "0", count: Swift.max(0, 6 - hex.count)) + hex
    }

    func replacingUnderscores() -> String { String(map { $0 == "_" ? " " : $0 }) }
}
