import LVBCore
import LVBCrypto
import LVBGossip

/// The layout shared by invites and membership passes: a statement by the
/// room's host about one node, at one time.
///
///     room (16) ‖ node (32) ‖ time (8, ms since the Unix epoch) ‖ signature (64)
///     signature = Ed25519 by the host over context ‖ 0x00 ‖ room ‖ node ‖ time
///
/// The context ("lvbnode invite v1" or "lvbnode pass v1") keeps an invite
/// from being passed off as a pass, or either as anything else the host signs.
struct HostGrant: Equatable, Sendable {
    static let encodedLength = 16 + 32 + 8 + 64

    let room: RoomID
    let node: NodeID
    let time: UInt64
    let signature: [UInt8]

    init(room: RoomID, node: NodeID, time: UInt64, signature: [UInt8]) {
        self.room = room
        self.node = node
        self.time = time
        self.signature = signature
    }

    init(signedBy host: Identity, context: [UInt8], room: RoomID, node: NodeID, time: UInt64) {
        self.init(room: room, node: node, time: time,
                  signature: host.sign(Self.message(context: context, room: room, node: node, time: time)))
    }

    func verify(context: [UInt8], host: NodeID) -> Bool {
        Identity.verify(signature: signature, message: Self.message(context: context, room: room, node: node, time: time), by: host)
    }

    static func message(context: [UInt8], room: RoomID, node: NodeID, time: UInt64) -> [UInt8] {
        var w = ByteWriter(capacity: context.count + 1 + 56)
        w.write(bytes: context)
        w.write(UInt8(0))
        w.write(bytes: room.bytes)
        w.write(bytes: node.publicKey)
        w.write(time)
        return w.bytes
    }

    func write(into w: inout ByteWriter) {
        w.write(bytes: room.bytes)
        w.write(bytes: node.publicKey)
        w.write(time)
        // Keeps the layout exact even for a hand-built grant with a bad signature
        // (zeros never verify).
        if signature.count == 64 { w.write(bytes: signature) } else { w.writeZeros(64) }
    }

    static func read(from r: inout ByteReader) throws(RoomError) -> HostGrant {
        do {
            let room = try RoomID.read(from: &r)
            let key = Array(try r.readBytes(32))
            guard let node = try? NodeID(publicKey: key) else { throw RoomError.badNodeID }
            let time = try r.readUInt64()
            let signature = Array(try r.readBytes(64))
            return HostGrant(room: room, node: node, time: time, signature: signature)
        } catch let e as RoomError {
            throw e
        } catch {
            throw .truncated
        }
    }
}

extension RoomID {
    /// Reads 16 bytes as a room id.
    static func read(from r: inout ByteReader) throws(RoomError) -> RoomID {
        guard let bytes = try? r.readBytes(16), let id = try? RoomID(bytes: Array(bytes)) else { throw .truncated }
        return id
    }
}

extension WallTime {
    /// Milliseconds since the Unix epoch (saturating).
    var milliseconds: UInt64 {
        let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let (sum, carry) = ms.addingReportingOverflow(UInt64(nanoseconds / 1_000_000))
        return overflow || carry ? .max : sum
    }
}
