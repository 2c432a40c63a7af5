import LVBCore
import LVBCrypto

// Event bodies (the event framing is in RoomEvent.swift); integers big-endian.
//
//     chat        text
//     danmaku     color(4) ‖ lane(1) ‖ text
//     like        total(8)
//     join        instance(8) ‖ role(1)
//     leave       reason(1)
//     profile     TLV fields: 1 nickname, 2 avatar, 3 gender(1), 4 location
//     roomInfo    TLV fields: 1 title, 2 cover, 3 location, 4 startedAt(8)
//     kick        target(32)
//     mute        target(32) ‖ muted(1: 0 or 1)
//     roomClosed  (empty)
//     stage       target(32) ‖ on(1: 0 or 1) ‖ reason(1: 0 when on, 1...4 when off)
//     relay       hasParent(1: 0 or 1) ‖ [parent(32)] ‖ depth(1) ‖ slots(1) ‖
//                 children(1) ‖ count(1: 0...4) ‖ address × count
//                 (an address: family(1: 4 or 6) ‖ 4 or 16 bytes ‖ port(2))
//
// A TLV field is type(1) ‖ len(1) ‖ value. Fields come in strictly increasing
// type order (so each at most once), none is empty, an unknown type is an
// error, and an empty sequence is allowed: exactly one encoding per value.

private typealias F = RoomEventFormat

extension EventBody {
    /// Enforces every limit; `make` calls it before encoding, `parse` after decoding.
    public func validate() throws(EventError) {
        switch self {
        case let .chat(text):
            try EventText.check(text, field: "chat", max: F.chatMax)
        case let .danmaku(text, color, lane):
            try EventText.check(text, field: "danmaku", max: F.danmakuMax)
            guard color <= F.danmakuMaxColor else { throw .badValue("danmaku color \(color) is above 0xFFFFFF") }
            guard lane < F.danmakuLanes else { throw .badValue("danmaku lane \(lane) is above 15") }
        case .like, .kick, .mute, .roomClosed:
            break
        case let .join(_, role):
            guard role.rawValue <= F.roleMax else { throw .badValue("join role \(role.rawValue) is not a room member's (0 viewer, 1 host)") }
        case let .leave(reason):
            guard reason <= F.leaveReasonMax else { throw .badValue("leave reason \(reason) is unknown") }
        case let .stage(_, onStage, reason):
            if onStage {
                guard reason == 0 else { throw .badValue("stage reason \(reason) given with on stage (must be 0)") }
            } else {
                guard (1...F.stageReasonMax).contains(reason) else { throw .badValue("stage end reason \(reason) is unknown") }
            }
        case let .relay(r):
            guard (r.parent == nil) == (r.depth == 0) else { throw .badValue("relay depth \(r.depth) with\(r.parent == nil ? "out" : "") a parent") }
            guard r.depth <= F.relayDepthMax else { throw .badValue("relay depth \(r.depth) is above \(F.relayDepthMax)") }
            guard r.slots <= F.relaySlotsMax else { throw .badValue("relay slots \(r.slots) are above \(F.relaySlotsMax)") }
            guard r.children <= r.slots else { throw .badValue("relay children \(r.children) exceed its slots \(r.slots)") }
            guard r.addresses.count <= F.relayAddressesMax else { throw .badValue("relay lists \(r.addresses.count) addresses (at most 4)") }
        case let .profile(p):
            if let v = p.nickname { try EventText.check(v, field: "nickname", max: F.nicknameMax) }
            if let v = p.avatar { try EventText.checkASCII(v, field: "avatar", max: F.avatarMax) }
            if let v = p.gender, v > F.genderMax { throw .badValue("gender \(v) is unknown") }
            if let v = p.location { try EventText.check(v, field: "location", max: F.locationMax) }
        case let .roomInfo(r):
            if let v = r.title { try EventText.check(v, field: "title", max: F.titleMax) }
            if let v = r.cover { try EventText.checkASCII(v, field: "cover", max: F.coverMax) }
            if let v = r.location { try EventText.check(v, field: "location", max: F.locationMax) }
        }
    }

    /// Appends the body; only for a body that passed `validate` (TLV values ≤ 255 bytes).
    func encode(into w: inout ByteWriter) {
        func field(_ type: UInt8, _ value: [UInt8]?) {
            guard let value else { return }
            w.write(type)
            w.writeShortBytes(value)
        }
        func be64(_ v: UInt64?) -> [UInt8]? {
            v.map { v in (0..<8).reversed().map { UInt8(truncatingIfNeeded: v >> ($0 * 8)) } }
        }
        switch self {
        case let .chat(text):
            w.write(bytes: text.utf8)
        case let .danmaku(text, color, lane):
            w.write(color)
            w.write(lane)
            w.write(bytes: text.utf8)
        case let .like(total):
            w.write(total)
        case let .join(instance, role):
            w.write(instance)
            w.write(role.rawValue)
        case let .leave(reason):
            w.write(reason)
        case let .profile(p):
            field(F.profileNickname, p.nickname.map { Array($0.utf8) })
            field(F.profileAvatar, p.avatar.map { Array($0.utf8) })
            field(F.profileGender, p.gender.map { [$0] })
            field(F.profileLocation, p.location.map { Array($0.utf8) })
        case let .roomInfo(r):
            field(F.roomTitle, r.title.map { Array($0.utf8) })
            field(F.roomCover, r.cover.map { Array($0.utf8) })
            field(F.roomLocation, r.location.map { Array($0.utf8) })
            field(F.roomStartedAt, be64(r.startedAt))
        case let .kick(target):
            w.write(bytes: target.publicKey)
        case let .mute(target, muted):
            w.write(bytes: target.publicKey)
            w.write(UInt8(muted ? 1 : 0))
        case .roomClosed:
            break
        case let .stage(target, onStage, reason):
            w.write(bytes: target.publicKey)
            w.write(UInt8(onStage ? 1 : 0))
            w.write(reason)
        case let .relay(r):
            w.write(UInt8(r.parent == nil ? 0 : 1))
            if let parent = r.parent { w.write(bytes: parent.publicKey) }
            w.write(r.depth)
            w.write(r.slots)
            w.write(r.children)
            w.write(UInt8(r.addresses.count))
            for a in r.addresses { w.write(address: a) }
        }
    }

    /// Decodes a body of `kind` that must fill `bytes` exactly, then validates it.
    static func decode(kind: EventKind, _ bytes: ArraySlice<UInt8>) throws(EventError) -> EventBody {
        var r = RoomEventReader(bytes)
        let body: EventBody
        switch kind {
        case .chat:
            body = .chat(text: try EventText.decode(r.rest()))
        case .danmaku:
            let color = try r.uint32()
            let lane = try r.uint8()
            body = .danmaku(text: try EventText.decode(r.rest()), color: color, lane: lane)
        case .like:
            body = .like(total: try r.uint64())
        case .join:
            let instance = try r.uint64(), raw = try r.uint8()
            guard let role = NodeRole(rawValue: raw), raw <= F.roleMax else { throw .badValue("join role \(raw) is not a room member's (0 viewer, 1 host)") }
            body = .join(instance: instance, role: role)
        case .leave:
            body = .leave(reason: try r.uint8())
        case .profile:
            var p = Profile()
            for (type, value) in try fields(&r, of: "profile", types: F.profileNickname...F.profileLocation) {
                switch type {
                case F.profileNickname: p.nickname = try EventText.decode(value)
                case F.profileAvatar: p.avatar = try EventText.decode(value)
                case F.profileGender:
                    guard value.count == 1, let g = value.first else { throw .badValue("gender is 1 byte") }
                    p.gender = g
                default: p.location = try EventText.decode(value)
                }
            }
            body = .profile(p)
        case .roomInfo:
            var info = RoomInfo()
            for (type, value) in try fields(&r, of: "room info", types: F.roomTitle...F.roomStartedAt) {
                switch type {
                case F.roomTitle: info.title = try EventText.decode(value)
                case F.roomCover: info.cover = try EventText.decode(value)
                case F.roomLocation: info.location = try EventText.decode(value)
                default:
                    guard value.count == 8 else { throw .badValue("startedAt is 8 bytes") }
                    info.startedAt = value.reduce(0) { $0 << 8 | UInt64($1) }
                }
            }
            body = .roomInfo(info)
        case .kick:
            body = .kick(target: try target(&r))
        case .mute:
            let target = try target(&r)
            switch try r.uint8() {
            case 0: body = .mute(target: target, muted: false)
            case 1: body = .mute(target: target, muted: true)
            case let v: throw .badValue("mute flag \(v) is not 0 or 1")
            }
        case .roomClosed:
            body = .roomClosed
        case .stage:
            let target = try target(&r)
            let on = try r.uint8()
            guard on <= 1 else { throw .badValue("stage flag \(on) is not 0 or 1") }
            body = .stage(target: target, onStage: on == 1, reason: try r.uint8())
        case .relay:
            let flag = try r.uint8()
            guard flag <= 1 else { throw .badValue("relay parent flag \(flag) is not 0 or 1") }
            let parent = flag == 1 ? try target(&r) : nil
            let depth = try r.uint8(), slots = try r.uint8(), children = try r.uint8()
            let count = Int(try r.uint8())
            guard count <= F.relayAddressesMax else { throw .badValue("relay lists \(count) addresses (at most 4)") }
            var addresses: [PeerAddress] = []
            for _ in 0..<count { addresses.append(try r.address()) }
            body = .relay(RelayPosition(parent: parent, depth: depth, slots: slots, children: children, addresses: addresses))
        }
        try r.expectEnd()
        try body.validate()
        return body
    }

    /// The TLV fields filling the rest of `r`, checked for order and known types.
    private static func fields(_ r: inout RoomEventReader, of what: String,
                               types: ClosedRange<UInt8>) throws(EventError) -> [(UInt8, ArraySlice<UInt8>)] {
        var out: [(UInt8, ArraySlice<UInt8>)] = []
        var last: UInt8 = 0
        while !r.isAtEnd {
            let type = try r.uint8()
            guard types.contains(type) else { throw .badValue("\(what) field type \(type) is unknown") }
            guard type > last else { throw .badValue("\(what) fields out of order or repeated (type \(type) after \(last))") }
            last = type
            out.append((type, try r.bytes(Int(try r.uint8()))))
        }
        return out
    }

    private static func target(_ r: inout RoomEventReader) throws(EventError) -> NodeID {
        let key = try r.bytes(F.authorLength)
        guard let id = try? NodeID(publicKey: Array(key)) else { throw .badValue("target is not a valid node key") }
        return id
    }
}

/// `ByteReader` with the errors of this format: running out is `truncated`,
/// bytes left over are `trailingBytes`.
struct RoomEventReader {
    private var inner: ByteReader

    init(_ bytes: ArraySlice<UInt8>) { inner = ByteReader(bytes) }

    var isAtEnd: Bool { inner.isAtEnd }

    mutating func uint8() throws(EventError) -> UInt8 {
        guard let v = try? inner.readUInt8() else { throw .truncated }
        return v
    }

    mutating func uint16() throws(EventError) -> UInt16 {
        guard let v = try? inner.readUInt16() else { throw .truncated }
        return v
    }

    mutating func uint32() throws(EventError) -> UInt32 {
        guard let v = try? inner.readUInt32() else { throw .truncated }
        return v
    }

    mutating func uint64() throws(EventError) -> UInt64 {
        guard let v = try? inner.readUInt64() else { throw .truncated }
        return v
    }

    mutating func bytes(_ count: Int) throws(EventError) -> ArraySlice<UInt8> {
        guard let v = try? inner.readBytes(count) else { throw .truncated }
        return v
    }

    mutating func rest() -> ArraySlice<UInt8> { inner.readRest() }

    mutating func address() throws(EventError) -> PeerAddress {
        do { return try inner.readAddress() } catch {
            if case .badAddress(let why) = error { throw .badValue("relay address: \(why)") }
            throw .truncated
        }
    }

    func expectEnd() throws(EventError) {
        guard inner.isAtEnd else { throw .trailingBytes }
    }
}
