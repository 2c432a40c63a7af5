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

    /// Members' names as the room shows them (`RoomNode.names`; short ids before there is a room).
    var names: RoomNames { room?.names ?? RoomNames { $0.short } }

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
        case .feature(let output):
            // A feature's own output, shown as it says (link-mic's and PK's signalling, a quiz answer…).
            guard let notice = (output as? RoomNotice) ?? room.flatMap(output.notice(in:)) else { return }
            out.emit(notice.line, human: notice.human, kind: notice.tag)
        }
    }

    /// A change shows as its event kind describes it (`RoomEvents.notice`).
    private func report(_ change: RoomChange) {
        guard let notice = RoomEvents.notice(for: change, names: names) else { return }
        out.emit(notice.line, human: notice.human, kind: notice.tag)
    }
}
