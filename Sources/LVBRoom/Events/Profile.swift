import LVBCore
import LVBCrypto
import LVBGossip

/// What a member shows about themselves; a field left nil is not set.
///
///     body: TLV fields 1 nickname, 2 avatar, 3 gender(1), 4 location
///
/// A TLV field is type(1) ‖ len(1) ‖ value, in strictly increasing type
/// order, none empty; an empty sequence is allowed.
public struct Profile: Equatable, Sendable {
    /// 1...32 UTF-8 bytes of text.
    public var nickname: String?
    /// 1...200 bytes of printable ASCII: a URL or a reference to an image.
    public var avatar: String?
    /// 0 unspecified, 1 female, 2 male, 3 other.
    public var gender: UInt8?
    /// 1...64 UTF-8 bytes of text.
    public var location: String?

    public init(nickname: String? = nil, avatar: String? = nil, gender: UInt8? = nil, location: String? = nil) {
        self.nickname = nickname
        self.avatar = avatar
        self.gender = gender
        self.location = location
    }

    static let nicknameMax = 32, avatarMax = 200, locationMax = 64
    static let genderMax: UInt8 = 3
    static let (nicknameField, avatarField, genderField, locationField): (UInt8, UInt8, UInt8, UInt8) = (1, 2, 3, 4)
}

extension Profile: EventContent {
    public static let kind = EventKind(6, "profile")
    public static let maxBodyLength = (2 + nicknameMax) + (2 + avatarMax) + (2 + 1) + (2 + locationMax)

    public func validate() throws(EventError) {
        if let v = nickname { try EventText.check(v, field: "nickname", max: Self.nicknameMax) }
        if let v = avatar { try EventText.checkASCII(v, field: "avatar", max: Self.avatarMax) }
        if let v = gender, v > Self.genderMax { throw .badValue("gender \(v) is unknown") }
        if let v = location { try EventText.check(v, field: "location", max: Self.locationMax) }
    }

    public func encode(into w: inout ByteWriter) {
        w.writeField(Self.nicknameField, nickname.map { Array($0.utf8) })
        w.writeField(Self.avatarField, avatar.map { Array($0.utf8) })
        w.writeField(Self.genderField, gender.map { [$0] })
        w.writeField(Self.locationField, location.map { Array($0.utf8) })
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> Profile {
        var p = Profile()
        for (type, value) in try r.fields(of: "profile", types: nicknameField...locationField) {
            switch type {
            case nicknameField: p.nickname = try EventText.decode(value)
            case avatarField: p.avatar = try EventText.decode(value)
            case genderField:
                guard value.count == 1, let g = value.first else { throw .badValue("gender is 1 byte") }
                p.gender = g
            default: p.location = try EventText.decode(value)
            }
        }
        return p
    }
}

extension EventKind {
    public static let profile = Profile.kind
}

extension EventBody {
    public static func profile(_ p: Profile) -> EventBody { EventBody(p) }
}

/// Latest wins per author, within the profile rate.
extension Profile: RoomEventRule {
    static var retention: EventRetention { .latestPerAuthor }

    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        if let order = RoomState.order(e, after: state.authorsLatest(e)) { return order }
        if limited, !state.profileBuckets.allow(e.author, now: now) { return .rejected(.rateLimited) }
        state.keepByAuthor(e)
        return .accepted([.profile(e.author, self)])
    }
}

extension Profile {
    /// The gender byte's names, 0 to 3.
    public static let genders = ["unspecified", "female", "male", "other"]

    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard case let .profile(id, p) = change else { return nil }
        var l = names.line("profile", id)
        l.add("avatar", p.avatar)
        l.add("gender", p.gender.map { genders[Int(min($0, genderMax))] })
        l.add("location", p.location)
        return RoomNotice(l, human: "\(id.short) is now \(p.nickname ?? id.short)", tag: "profile")
    }

    static var commands: [RoomCommand] {
        [RoomCommand(console: "/nick NAME", "set your nickname") { name in
             guard !name.isEmpty else { return nil }
             return { r in
                 var p = r.profile
                 p.nickname = name
                 try r.setProfile(p)
             }
         },
         RoomCommand(console: "/profile key=value…", "nick, avatar, gender (female|male|other|unspecified), location") { text in
             var pairs: [(String, String)] = []
             for item in text.split(separator: " ") {
                 let kv = item.split(separator: "=", maxSplits: 1).map(String.init)
                 guard kv.count == 2, ["nick", "avatar", "gender", "location"].contains(kv[0]) else { return nil }
                 if kv[0] == "gender", !genders.contains(kv[1].lowercased()) { return nil }
                 pairs.append((kv[0], kv[1]))
             }
             guard !pairs.isEmpty else { return nil }
             return { [pairs] r in
                 var p = r.profile
                 for (k, v) in pairs {
                     switch k {
                     case "nick": p.nickname = v
                     case "avatar": p.avatar = v
                     case "location": p.location = v
                     default: p.gender = genders.firstIndex(of: v.lowercased()).map(UInt8.init)
                     }
                 }
                 try r.setProfile(p)
             }
         }]
    }
}

extension RoomNode {
    /// Our profile: kept for the join, posted now if we are in the room.
    public func setProfile(_ p: Profile) throws(RoomActionError) {
        profile = p
        guard state != nil, startInfo == nil else { return }
        try publish(.profile(p)).get()
    }
}
