import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom

/// A host's signed statement that its room is live (or closed), which a
/// rendezvous lists for a while and then forgets (soft state):
///
///     announcement = 1 (version) ‖ room id (16) ‖ host (32) ‖ seq (8) ‖ time ms (8)
///                  ‖ flags (1: bit 0 closed, bits 1–2 access) ‖ viewers (4) ‖ likes (8) ‖ started ms (8)
///                  ‖ title ‖ host nickname ‖ cover ‖ location      each len (1) ‖ UTF-8, 0 = none
///                  ‖ address count (1) ‖ addresses                 family ‖ address ‖ port
///                  ‖ signature (64)
///     signature    = SIGN(host, "lvbnode announce v1" ‖ 0x00 ‖ everything before it)
///
/// Text follows the room's own rules (a title as in room_info, the
/// nickname as in a profile), so a rendezvous lists nothing a room would refuse.
public struct RoomAnnouncement: Equatable, Sendable {
    public var room: RoomID
    public var host: NodeID
    /// Grows with every announcement of the room (the host's wall clock in µs):
    /// an older or equal one is a replay.
    public var seq: UInt64
    /// When the host signed it (ms since the Unix epoch).
    public var time: UInt64
    public var closed: Bool
    /// How the room admits: 0 open, 1 password, 2 invite-only (as in tickets).
    public var access: UInt8 = 0
    public var viewers: UInt32
    public var likes: UInt64
    public var info: RoomInfo
    public var hostNickname: String?
    /// The host's addresses: local ones and the reflexive one its STUN answer gave.
    public var addresses: [PeerAddress]
    public private(set) var signature: [UInt8] = []

    public init(room: RoomID, host: NodeID, seq: UInt64, time: UInt64, closed: Bool = false, viewers: UInt32 = 0,
                likes: UInt64 = 0, info: RoomInfo = RoomInfo(), hostNickname: String? = nil, addresses: [PeerAddress] = []) {
        self.room = room
        self.host = host
        self.seq = seq
        self.time = time
        self.closed = closed
        self.viewers = viewers
        self.likes = likes
        self.info = info
        self.hostNickname = hostNickname
        self.addresses = addresses
    }

    /// Signs the announcement as `identity` (which must be its host).
    public mutating func sign(with identity: Identity) throws(AnnouncementError) {
        guard identity.nodeID == host else { throw .notTheHost }
        try validate()
        signature = identity.sign(RendezvousConstants.announceContext + [0] + signedBytes)
    }

    /// The announcement on the wire (signed).
    public var encoded: [UInt8] { signedBytes + signature }

    /// Parses and checks an announcement: layout, text rules and signature.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(AnnouncementError) -> RoomAnnouncement {
        guard bytes.count <= RendezvousConstants.maxAnnouncement else { throw .tooLong }
        var r = ByteReader(bytes)
        do {
            guard try r.readUInt8() == RendezvousConstants.announceVersion else { throw AnnouncementError.unknownVersion }
            let room = try RoomID(bytes: Array(try r.readBytes(16)))
            guard let host = try? NodeID(publicKey: Array(try r.readBytes(32))) else { throw AnnouncementError.badHost }
            var a = RoomAnnouncement(room: room, host: host, seq: try r.readUInt64(), time: try r.readUInt64())
            let flags = try r.readUInt8()
            guard flags & ~7 == 0, (flags >> 1) & 3 != 3 else { throw AnnouncementError.badValue("flags \(flags)") }
            a.closed = flags & 1 != 0
            a.access = (flags >> 1) & 3
            a.viewers = try r.readUInt32()
            a.likes = try r.readUInt64()
            let started = try r.readUInt64()
            a.info = RoomInfo(title: try text(&r), cover: try text(&r), location: try text(&r), startedAt: started == 0 ? nil : started)
            a.hostNickname = try text(&r)
            let count = Int(try r.readUInt8())
            guard count <= RendezvousConstants.maxAnnouncedAddresses else { throw AnnouncementError.badValue("\(count) addresses") }
            a.addresses = try (0..<count).map { _ throws(CoreError) in try r.readAddress() }
            let signedEnd = r.offset
            a.signature = Array(try r.readBytes(64))
            guard r.isAtEnd else { throw AnnouncementError.trailingBytes }
            try a.validate()
            guard Identity.verify(signature: a.signature, message: RendezvousConstants.announceContext + [0] + Array(bytes[..<signedEnd]), by: host)
            else { throw AnnouncementError.badSignature }
            return a
        } catch let e as AnnouncementError {
            throw e
        } catch {
            throw .truncated
        }
    }

    /// The text fields follow the room's rules for the same fields.
    func validate() throws(AnnouncementError) {
        do {
            if info != RoomInfo() { try EventBody.roomInfo(info).validate() }
            if let hostNickname { try EventBody.profile(Profile(nickname: hostNickname)).validate() }
        } catch {
            throw .badValue("\(error)")
        }
        guard addresses.count <= RendezvousConstants.maxAnnouncedAddresses else { throw .badValue("\(addresses.count) addresses") }
        guard access <= 2 else { throw .badValue("access \(access)") }
    }

    private var signedBytes: [UInt8] {
        var w = ByteWriter(capacity: 256)
        w.write(RendezvousConstants.announceVersion)
        w.write(bytes: room.bytes)
        w.write(bytes: host.publicKey)
        w.write(seq)
        w.write(time)
        w.write(UInt8(closed ? 1 : 0) | (access & 3) << 1)
        w.write(viewers)
        w.write(likes)
        w.write(info.startedAt ?? 0)
        for t in [info.title, info.cover, info.location, hostNickname] { w.writeShortBytes(Array((t ?? "").utf8)) }
        w.write(UInt8(addresses.count))
        for a in addresses { w.write(address: a) }
        return w.bytes
    }

    private static func text(_ r: inout ByteReader) throws -> String? {
        let length = Int(try r.readUInt8())
        guard length > 0 else { return nil }
        guard let s = String(validating: Array(try r.readBytes(length)), as: UTF8.self) else { throw AnnouncementError.badValue("text is not UTF-8") }
        return s
    }
}

/// Why an announcement was refused (counted by the rendezvous, never answered).
public enum AnnouncementError: Error, Equatable, CustomStringConvertible {
    case truncated, trailingBytes, tooLong, unknownVersion, badHost, badSignature
    /// Only the room's host may sign its announcements.
    case notTheHost
    /// A field out of its range or text the room's rules refuse.
    case badValue(String)

    public var description: String {
        switch self {
        case .truncated: "announcement is truncated"
        case .trailingBytes: "announcement has trailing bytes"
        case .tooLong: "announcement is too long"
        case .unknownVersion: "announcement version is unknown"
        case .badHost: "announcement host is not a valid node key"
        case .badSignature: "announcement signature does not verify"
        case .notTheHost: "only the room's host may sign its announcement"
        case .badValue(let why): "announcement: \(why)"
        }
    }
}
