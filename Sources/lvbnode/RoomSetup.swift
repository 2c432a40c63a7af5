import ArgumentParser
import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport

/// Ticket fields this version writes (JoinTicket's extensible TLVs).
enum TicketField {
    /// The room id (16 bytes).
    static let room: UInt8 = 1
    /// Access: 0 open, 1 password, 2 invite-only.
    static let access: UInt8 = 2
}

/// What the runner needs to host or join a room.
enum RoomSetup {
    case host(room: RoomID, mode: AdmissionPolicy.Mode, access: UInt8, info: RoomInfo)
    case join(room: RoomID, host: NodeID?, proof: JoinProof, addresses: [PeerAddress], access: UInt8)

    /// The ticket others use to join this room.
    func ticket(host id: NodeID, addresses: [PeerAddress]) -> JoinTicket {
        switch self {
        case let .host(room, _, access, _):
            return JoinTicket(host: id, addresses: addresses, fields: [TicketField.room: room.bytes, TicketField.access: [access]])
        case let .join(room, host, _, hostAddresses, access):
            // A member hands out the room's ticket; joined by bare address it
            // knows neither yet, so it offers its own node ticket until then.
            guard let host, room != RoomNode.anyRoom else { return JoinTicket(host: id, addresses: hostAddresses) }
            return JoinTicket(host: host, addresses: hostAddresses, fields: [TicketField.room: room.bytes, TicketField.access: [access]])
        }
    }
}

/// Room and profile options shared by host and join.
struct ProfileOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Nickname shown to the room (1–32 bytes).", valueName: "name"))
    var nick: String?

    var profile: Profile { Profile(nickname: nick) }

    func validate() throws {
        if let nick {
            do { try EventBody.profile(Profile(nickname: nick)).validate() } catch {
                throw ValidationError("--nick: \(error)")
            }
        }
    }
}

extension RoomID {
    /// The room id a ticket carries, or `RoomNode.anyRoom` for an old or bare ticket.
    static func from(_ ticket: JoinTicket) -> RoomID {
        ticket.fields[TicketField.room].flatMap { try? RoomID(bytes: $0) } ?? RoomNode.anyRoom
    }
}
