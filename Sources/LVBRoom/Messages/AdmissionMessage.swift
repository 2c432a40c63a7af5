import LVBCore
import LVBCrypto
import LVBGossip

// Room admission on `DataChannel.room` (man/lvbnode-protocol.7 §ADMISSION).
// Every message has one fixed layout per type; lengths are exact and nothing
// may follow, so each message has exactly one encoding.
//
//     request:   1 ‖ room (16) ‖ proof
//         proof: 0                          no proof (open rooms)
//                1 ‖ mac (32)               password proof
//                2 ‖ invite (120)           host-signed invite (Invite.swift)
//     response:  2 ‖ room (16) ‖ result
//        result: 0 ‖ pass (120)             admitted (MembershipPass.swift)
//                1 ‖ reason (1)             denied, reason 1...6 (AdmissionDenial)
//
//     mac = BLAKE2b-MAC-256(key: room key, "lvbnode join proof v1" ‖
//                           session binding (64) ‖ joiner id (32) ‖ room id (16))
//
// The session binding is the Noise handshake hash of the session carrying the
// request, known only to its two ends: a captured proof is useless on any
// other session, and it names the joiner, so it cannot be lent either.

/// What a joiner offers to be admitted.
public enum AdmissionProof: Equatable, Sendable {
    case none
    /// The 32-byte join proof (`AdmissionRequest.joinProof`).
    case password(mac: [UInt8])
    /// A host-signed invite for the joiner.
    case invite(Invite)
}

/// A joiner's request to be admitted to a room.
public struct AdmissionRequest: Equatable, Sendable {
    public var room: RoomID
    public var proof: AdmissionProof

    public init(room: RoomID, proof: AdmissionProof) {
        self.room = room
        self.proof = proof
    }

    /// A password request from `joiner` on the session with binding
    /// `sessionBinding` (`TransportCore.sessionBinding(with:)`).
    public static func password(roomKey: [UInt8], sessionBinding: [UInt8], joiner: NodeID, room: RoomID) -> AdmissionRequest {
        AdmissionRequest(room: room, proof: .password(mac: joinProof(roomKey: roomKey, sessionBinding: sessionBinding, joiner: joiner, room: room)))
    }

    /// BLAKE2b-MAC-256 of the join proof (see the layout above). `roomKey` is
    /// a `PasswordKey.derive` output (32 bytes).
    public static func joinProof(roomKey: [UInt8], sessionBinding: [UInt8], joiner: NodeID, room: RoomID) -> [UInt8] {
        precondition(roomKey.count == PasswordKey.keyLength, "room keys are 32 bytes")  // invariant: keys come from PasswordKey.derive
        return Blake2b.mac(key: roomKey, RoomConstants.joinProofContext, sessionBinding, joiner.publicKey, room.bytes,
                           length: RoomConstants.joinProofLength)
    }
}

/// Why a joiner was refused; the raw value is the wire byte.
public enum AdmissionDenial: UInt8, Equatable, Sendable, CustomStringConvertible {
    case wrongPassword = 1
    case inviteRequired = 2
    /// Invalid, expired, or for someone else.
    case inviteInvalid = 3
    case kicked = 4
    case roomClosed = 5
    case wrongRoom = 6

    public var description: String {
        switch self {
        case .wrongPassword: "wrong room password (or too many attempts; wait a minute)"
        case .inviteRequired: "this room is invite-only; ask the host for an invite"
        case .inviteInvalid: "the invite is invalid, expired, or for another node; ask the host for a new one"
        case .kicked: "you were kicked from this room"
        case .roomClosed: "the room is closed"
        case .wrongRoom: "this node is not hosting that room"
        }
    }
}

/// The outcome of an admission request.
public enum AdmissionResult: Equatable, Sendable {
    case admitted(pass: MembershipPass)
    case denied(reason: AdmissionDenial)
}

/// The admitting node's answer.
public struct AdmissionResponse: Equatable, Sendable {
    public var room: RoomID
    public var result: AdmissionResult

    public init(room: RoomID, result: AdmissionResult) {
        self.room = room
        self.result = result
    }
}

/// Admission: a joiner asks the host (or, showing its pass, a member) to be
/// let in; the answer carries a pass or a refusal.
///
///     1 admission request    room(16) ‖ proof(1: 0 none, 1 password, 2 invite) ‖ …
///     2 admission response   room(16) ‖ result(1: 0 admitted, 1 denied) ‖ pass or reason
public enum AdmissionMessage: RoomMessageContent, Equatable {
    case request(AdmissionRequest)
    case response(AdmissionResponse)

    static let types: [RoomMessage.Kind] = [.admissionRequest, .admissionResponse]

    func received(from peer: NodeID, by node: RoomNode) { node.handleAdmission(self, from: peer) }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 1 + 16 + 1 + HostGrant.encodedLength)
        switch self {
        case let .request(q):
            w.write(RoomMessage.Kind.admissionRequest.rawValue)
            w.write(bytes: q.room.bytes)
            switch q.proof {
            case .none: w.write(UInt8(0))
            case let .password(mac):
                w.write(UInt8(1))
                // A hand-built proof of the wrong length goes out as zeros: same layout, never valid.
                if mac.count == RoomConstants.joinProofLength { w.write(bytes: mac) } else { w.writeZeros(RoomConstants.joinProofLength) }
            case let .invite(invite): w.write(UInt8(2)); w.write(bytes: invite.encoded)
            }
        case let .response(a):
            w.write(RoomMessage.Kind.admissionResponse.rawValue)
            w.write(bytes: a.room.bytes)
            switch a.result {
            case let .admitted(pass): w.write(UInt8(0)); w.write(bytes: pass.encoded)
            case let .denied(reason): w.write(UInt8(1)); w.write(reason.rawValue)
            }
        }
        return w.bytes
    }

    /// Parses a room-channel payload; any deviation from the layout is an error.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> AdmissionMessage {
        var r = ByteReader(bytes)
        let type = try byte(&r)
        let message: AdmissionMessage
        switch type {
        case RoomMessage.Kind.admissionRequest.rawValue:
            let room = try RoomID.read(from: &r)
            let proof: AdmissionProof
            switch try byte(&r) {
            case 0: proof = .none
            case 1:
                guard let mac = try? r.readBytes(RoomConstants.joinProofLength) else { throw .truncated }
                proof = .password(mac: Array(mac))
            case 2: proof = .invite(try Invite.read(from: &r))
            case let t: throw .unknownProof(t)
            }
            message = .request(AdmissionRequest(room: room, proof: proof))
        case RoomMessage.Kind.admissionResponse.rawValue:
            let room = try RoomID.read(from: &r)
            let result: AdmissionResult
            switch try byte(&r) {
            case 0: result = .admitted(pass: try MembershipPass.read(from: &r))
            case 1:
                let raw = try byte(&r)
                guard let reason = AdmissionDenial(rawValue: raw) else { throw .unknownDenial(raw) }
                result = .denied(reason: reason)
            case let t: throw .unknownResult(t)
            }
            message = .response(AdmissionResponse(room: room, result: result))
        default:
            throw .unknownMessage(type)
        }
        guard r.isAtEnd else { throw .trailingBytes }
        return message
    }

    private static func byte(_ r: inout ByteReader) throws(RoomError) -> UInt8 {
        guard let b = try? r.readUInt8() else { throw .truncated }
        return b
    }
}

extension RoomMessage.Kind {
    public static let admissionRequest = Self(rawValue: 1)
    public static let admissionResponse = Self(rawValue: 2)
}

public extension AdmissionRequest {
    var encoded: [UInt8] { AdmissionMessage.request(self).encoded }
}

public extension AdmissionResponse {
    var encoded: [UInt8] { AdmissionMessage.response(self).encoded }
}
