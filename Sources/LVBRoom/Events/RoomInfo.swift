import LVBCore
import LVBCrypto
import LVBGossip

/// What the host shows about the room; a field left nil is not set.
///
///     body: TLV fields 1 title, 2 cover, 3 location, 4 startedAt(8),
///           5 chatRate(2: 1...1000)
///
/// TLV fields as in a profile.
public struct RoomInfo: Equatable, Sendable {
    /// 1...100 UTF-8 bytes of text.
    public var title: String?
    /// 1...200 bytes of printable ASCII: a URL or a reference to an image.
    public var cover: String?
    /// 1...64 UTF-8 bytes of text.
    public var location: String?
    /// When the broadcast started, in milliseconds since the Unix epoch.
    public var startedAt: UInt64?
    /// Chat lines and bullet comments the whole room carries per second
    /// (slow mode for a busy room); nil: `RoomConstants.defaultRoomChatRate`.
    public var chatRate: UInt16?

    public init(title: String? = nil, cover: String? = nil, location: String? = nil, startedAt: UInt64? = nil, chatRate: UInt16? = nil) {
        self.title = title
        self.cover = cover
        self.location = location
        self.startedAt = startedAt
        self.chatRate = chatRate
    }

    static let titleMax = 100, coverMax = 200, locationMax = 64
    /// The room-wide chat rate a host may set, per second.
    public static let chatRates: ClosedRange<UInt16> = 1...1000
    static let (titleField, coverField, locationField, startedAtField, chatRateField): (UInt8, UInt8, UInt8, UInt8, UInt8) = (1, 2, 3, 4, 5)
}

extension RoomInfo: EventContent {
    public static let kind = EventKind(7, "roomInfo")
    public static let maxBodyLength = (2 + titleMax) + (2 + coverMax) + (2 + locationMax) + (2 + 8) + (2 + 2)

    public func validate() throws(EventError) {
        if let v = title { try EventText.check(v, field: "title", max: Self.titleMax) }
        if let v = cover { try EventText.checkASCII(v, field: "cover", max: Self.coverMax) }
        if let v = location { try EventText.check(v, field: "location", max: Self.locationMax) }
        if let v = chatRate, !Self.chatRates.contains(v) { throw .badValue("chat rate \(v) is not 1...1000 a second") }
    }

    public func encode(into w: inout ByteWriter) {
        w.writeField(Self.titleField, title.map { Array($0.utf8) })
        w.writeField(Self.coverField, cover.map { Array($0.utf8) })
        w.writeField(Self.locationField, location.map { Array($0.utf8) })
        w.writeField(Self.startedAtField, startedAt.map { v in (0..<8).reversed().map { UInt8(truncatingIfNeeded: v >> ($0 * 8)) } })
        w.writeField(Self.chatRateField, chatRate.map { [UInt8($0 >> 8), UInt8(truncatingIfNeeded: $0)] })
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> RoomInfo {
        var info = RoomInfo()
        for (type, value) in try r.fields(of: "room info", types: titleField...chatRateField) {
            switch type {
            case titleField: info.title = try EventText.decode(value)
            case coverField: info.cover = try EventText.decode(value)
            case locationField: info.location = try EventText.decode(value)
            case chatRateField:
                guard value.count == 2 else { throw .badValue("chatRate is 2 bytes") }
                let rate = UInt16(value[value.startIndex]) << 8 | UInt16(value[value.startIndex + 1])
                guard chatRates.contains(rate) else { throw .badValue("chat rate \(rate) is not 1...1000 a second") }
                info.chatRate = rate
            default:
                guard value.count == 8 else { throw .badValue("startedAt is 8 bytes") }
                info.startedAt = value.reduce(0) { $0 << 8 | UInt64($1) }
            }
        }
        return info
    }
}

extension EventKind {
    public static let roomInfo = RoomInfo.kind
}

extension EventBody {
    public static func roomInfo(_ info: RoomInfo) -> EventBody { EventBody(info) }
}

/// The host's alone; latest wins.
extension RoomInfo: RoomEventRule {
    static var retention: EventRetention { .latest }

    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        state.hostsLatest(e)
    }
}

extension RoomInfo {
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard let (_, info) = posted(change) else { return nil }
        var l = JSONLine(event: "room_info")
        l.add("title", info.title)
        l.add("cover", info.cover)
        l.add("location", info.location)
        if let s = info.startedAt { l.add("started_at", Int(s)) }
        l.add("chat_rate", Int(info.chatRate ?? RoomConstants.defaultRoomChatRate))
        let rate = info.chatRate.map { " · chat \($0)/s" } ?? ""
        return RoomNotice(l, human: "room: \(info.title ?? "(untitled)")\(rate)", tag: "room")
    }

    static var commands: [RoomCommand] {
        [RoomCommand(console: "/title TEXT", "set the room title (host)") { title in
             guard !title.isEmpty else { return nil }
             return { try $0.setTitle(title) }
         },
         RoomCommand(page: "title") { fields throws(CommandFieldError) in
             let title = try fields.text("text")
             return { try $0.setTitle(title) }
         },
         RoomCommand(console: "/chatrate N", "chat lines and bullet comments the whole room carries a second, 1 to 1000 (host; slow mode)") { rest in
             guard let n = UInt16(rest), chatRates.contains(n) else { return nil }
             return { try $0.setChatRate(n) }
         },
         RoomCommand(page: "chat_rate") { fields throws(CommandFieldError) in
             let n = try fields.count("rate", in: Int(chatRates.lowerBound)...Int(chatRates.upperBound), fallback: Int(RoomConstants.defaultRoomChatRate))
             return { try $0.setChatRate(UInt16(n)) }
         }]
    }
}

extension RoomNode {
    public func setRoomInfo(_ info: RoomInfo) throws(RoomActionError) {
        guard isHost else { throw .hostOnly }
        try publish(.roomInfo(info)).get()
    }

    /// The room's info as it is, with a new room-wide chat rate.
    public func setChatRate(_ rate: UInt16) throws(RoomActionError) {
        var info = state?.info ?? RoomInfo()
        info.chatRate = rate
        try setRoomInfo(info)
    }

    /// The room's info as it is, with a new title.
    public func setTitle(_ title: String) throws(RoomActionError) {
        var info = state?.info ?? RoomInfo()
        info.title = title
        try setRoomInfo(info)
    }
}
