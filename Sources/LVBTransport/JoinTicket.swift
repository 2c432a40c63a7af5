import LVBCore
import LVBCrypto

/// A join ticket: one printable token with the host's identity and addresses,
/// so a joiner can run the IK handshake (it knows the key) without any server.
///
/// Text: "lvb1" ‖ base32(body ‖ check), where check = BLAKE2b-256(body)[0..<4]
/// body: version(1)=1 ‖ ed25519 key(32) ‖ count(1) ‖ count × address ‖ fields
/// address: family(1: 4 or 6) ‖ 4 or 16 bytes ‖ port(2, big-endian)
/// fields: type(1) ‖ length(1) ‖ value — unknown types are skipped, so later
/// versions can add fields without breaking older joiners (the room layer
/// uses type 1, the room id, and 2, its access mode).
public struct JoinTicket: Equatable, Sendable {
    public static let prefix = "lvb1"
    public static let maxAddresses = 8

    public var host: NodeID
    public var addresses: [PeerAddress]
    /// Extra typed fields (type → value) for later layers.
    public var fields: [UInt8: [UInt8]]

    public init(host: NodeID, addresses: [PeerAddress], fields: [UInt8: [UInt8]] = [:]) {
        self.host = host
        self.addresses = Array(addresses.prefix(Self.maxAddresses))
        self.fields = fields
    }

    public var text: String {
        var w = ByteWriter(capacity: 128)
        w.write(UInt8(1))
        w.write(bytes: host.publicKey)
        w.write(UInt8(addresses.count))
        for a in addresses { w.write(address: a) }
        for (type, value) in fields.sorted(by: { $0.key < $1.key }) where value.count <= 255 {
            w.write(type)
            w.writeShortBytes(value)
        }
        let body = w.bytes
        return Self.prefix + Base32.encode(body + Blake2b.hash(body, length: 32).prefix(4))
    }

    /// Parses a ticket; errors say what is wrong in words a user can act on.
    public init(text raw: String) throws(TicketError) {
        let text = String(raw.trimmingSpacesAndNewlines())
        guard text.lowercased().hasPrefix(Self.prefix) else { throw .notATicket }
        let bytes: [UInt8]
        do { bytes = try Base32.decode(String(text.dropFirst(Self.prefix.count))) } catch { throw .damaged }
        guard bytes.count > 4 else { throw .damaged }
        let body = Array(bytes.dropLast(4))
        guard constantTimeEqual(Blake2b.hash(body, length: 32).prefix(4), bytes.suffix(4)) else { throw .damaged }
        var r = ByteReader(body)
        do {
            let version = try r.readUInt8()
            guard version == 1 else { throw TicketError.unsupportedVersion(version) }
            guard let id = try? NodeID(publicKey: Array(r.readBytes(32))) else { throw TicketError.damaged }
            let count = Int(try r.readUInt8())
            guard count >= 1, count <= Self.maxAddresses else { throw TicketError.damaged }
            var addresses = [PeerAddress]()
            for _ in 0..<count { addresses.append(try r.readAddress()) }
            var fields = [UInt8: [UInt8]]()
            while !r.isAtEnd {
                let type = try r.readUInt8()
                fields[type] = Array(try r.readShortBytes())
            }
            self.init(host: id, addresses: addresses, fields: fields)
        } catch let e as TicketError {
            throw e
        } catch {
            throw .damaged
        }
    }
}

/// Why a ticket was refused.
public enum TicketError: Error, Equatable, CustomStringConvertible {
    /// The text does not start with "lvb1".
    case notATicket
    /// Characters are missing, extra or changed (the checksum fails).
    case damaged
    /// Made by a newer lvbnode.
    case unsupportedVersion(UInt8)

    public var description: String {
        switch self {
        case .notATicket: "this is not a join ticket (tickets start with 'lvb1'); pass a ticket, IP:PORT or localhost:PORT"
        case .damaged: "the join ticket is damaged (a character is missing or changed); copy it again from the host's output"
        case let .unsupportedVersion(v): "the join ticket has version \(v), which this lvbnode does not know; upgrade lvbnode"
        }
    }
}

extension String {
    func trimmingSpacesAndNewlines() -> Substring {
        var s = self[...]
        while let f = s.first, f.isWhitespace || f.isNewline { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace || l.isNewline { s = s.dropLast() }
        return s
    }
}
