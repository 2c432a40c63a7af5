import LVBCore
import LVBMedia

/// Link-mic's console and page commands: ask to go on stage, answer a
/// request, hang up, and how the host lays co-hosts out in its picture.
extension LinkMic {
    static let commands: [RoomCommand] = [
        RoomCommand(console: "/linkmic [TEXT]", "ask the host to go on stage as co-host (viewer)") { text in
            { try $0.requestLinkMic(text) }
        },
        RoomCommand(console: "/accept [NAME]", "put NAME on stage (host; left out: the only request waiting)") { who in
            { try $0.acceptLinkMic(who) }
        },
        RoomCommand(console: "/reject NAME [REASON]", "turn down NAME's request to go on stage (host)") { text in
            let args = text.split(separator: " ", maxSplits: 1).map(String.init)
            guard let who = args.first else { return nil }
            let reason = args.count > 1 ? args[1] : ""
            return { try $0.rejectLinkMic(who, reason: reason) }
        },
        RoomCommand(console: "/hangup [NAME]", "leave the stage or withdraw your request (viewer); take NAME off stage (host)") { who in
            { try $0.hangUpLinkMic(who.isEmpty ? nil : who) }
        },
        RoomCommand(node: "/layout pip|split|grid", "how co-hosts are placed in the mixed picture (host)") { text in
            StageLayout(rawValue: text.lowercased()).map(layoutAction)
        },
        RoomCommand(page: "linkmic") { fields throws(CommandFieldError) in
            let text = try fields.optionalText("text")
            return { try $0.requestLinkMic(text) }
        },
        RoomCommand(page: "accept") { fields throws(CommandFieldError) in
            let who = try fields.word("id")
            return { try $0.acceptLinkMic(who) }
        },
        RoomCommand(page: "reject") { fields throws(CommandFieldError) in
            let who = try fields.word("id"), reason = try fields.optionalText("reason")
            return { try $0.rejectLinkMic(who, reason: reason) }
        },
        RoomCommand(page: "hangup") { fields throws(CommandFieldError) in
            let who = try fields.optionalWord("id")
            return { try $0.hangUpLinkMic(who) }
        },
        RoomCommand(nodePage: "layout") { fields throws(CommandFieldError) in
            guard let layout = StageLayout(rawValue: try fields.word("layout")) else { throw .invalid("layout") }
            return layoutAction(layout)
        },
    ]

    /// Lays the co-hosts out so in the host's mixed picture, and says so.
    private static func layoutAction(_ layout: StageLayout) -> RoomCommand.NodeAction {
        { node in
            try node.publishing.setLayout(layout)
            var l = JSONLine(event: "layout")
            l.add("layout", layout.rawValue)
            node.room.show(RoomNotice(l, human: "co-hosts now shown as \(layout.rawValue)", tag: "linkmic"))
        }
    }
}
