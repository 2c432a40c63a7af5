import LVBCore
import LVBCrypto
import LVBGossip

/// Counters of admission decisions, for stats and logs.
public struct AdmissionStats: Equatable, Sendable {
    public var admitted = 0
    public var denied = 0
    /// Password proofs checked and found wrong.
    public var failedPasswords = 0
    /// Password proofs refused unchecked: the peer had used up its attempts.
    public var throttledPasswords = 0
}

/// The host's gate to its room: decides admission requests (open, password
/// or invite-only), issues membership passes and invites. Single-threaded,
/// on the node's event loop.
public final class AdmissionPolicy {
    /// Who may join.
    public enum Mode {
        /// Anyone (who is not kicked) is admitted.
        case open
        /// Joiners prove they know the password (`PasswordKey.derive` gives the 32-byte key).
        case password(roomKey: [UInt8])
        /// Only holders of the host's invite are admitted.
        case inviteOnly
    }

    public let room: RoomID
    public let mode: Mode
    /// Whether joiners must prove something (password or invite).
    public var isPrivate: Bool {
        if case .open = mode { return false }
        return true
    }
    public private(set) var stats = AdmissionStats()

    private let host: Identity
    private let clock: Clock
    /// Failed password proofs per peer: `passwordAttempts` per `passwordAttemptWindow`.
    private var attempts = RateLimiter<NodeID>(count: RoomConstants.passwordAttempts, per: RoomConstants.passwordAttemptWindow,
                                               burst: RoomConstants.passwordAttempts, sweepThreshold: RoomConstants.sweepThreshold)

    public init(room: RoomID, host: Identity, mode: Mode, clock: Clock) {
        if case let .password(key) = mode {
            precondition(key.count == PasswordKey.keyLength, "room keys are 32 bytes")  // invariant: keys come from PasswordKey.derive
        }
        self.room = room
        self.host = host
        self.mode = mode
        self.clock = clock
    }

    /// Decides `request` from the authenticated `peer`. `sessionBindings`
    /// are `TransportCore.sessionBindings(with: peer)`: a proof bound to any
    /// of the live sessions with `peer` counts (when both sides dialled at
    /// once, each may be sending under the keys it initiated); `kicked` and
    /// `closed` come from the room state. A host-signed invite for `peer` is
    /// enough in a password room too.
    public func evaluate(_ request: AdmissionRequest, from peer: NodeID, sessionBindings: [[UInt8]],
                         kicked: Bool, closed: Bool) -> AdmissionResponse {
        let verdict = decide(request, from: peer, sessionBindings: sessionBindings, kicked: kicked, closed: closed)
        guard let reason = verdict else {
            stats.admitted += 1
            let pass = MembershipPass(host: host, room: room, member: peer, issuedAt: clock.wallTime().milliseconds)
            return AdmissionResponse(room: room, result: .admitted(pass: pass))
        }
        stats.denied += 1
        return AdmissionResponse(room: request.room, result: .denied(reason: reason))
    }

    /// `evaluate` with one session's binding.
    public func evaluate(_ request: AdmissionRequest, from peer: NodeID, sessionBinding: [UInt8],
                         kicked: Bool, closed: Bool) -> AdmissionResponse {
        evaluate(request, from: peer, sessionBindings: [sessionBinding], kicked: kicked, closed: closed)
    }

    /// nil to admit, else why not.
    private func decide(_ request: AdmissionRequest, from peer: NodeID, sessionBindings: [[UInt8]],
                        kicked: Bool, closed: Bool) -> AdmissionDenial? {
        guard request.room == room else { return .wrongRoom }
        guard !closed else { return .roomClosed }
        guard !kicked else { return .kicked }
        if case let .invite(invite) = request.proof {
            let valid = invite.isValid(room: room, host: host.nodeID, invitee: peer, now: clock.wallTime().milliseconds)
            return valid ? nil : .inviteInvalid
        }
        switch (mode, request.proof) {
        case (.open, _):
            return nil
        case (.inviteOnly, _):
            return .inviteRequired
        case let (.password(key), .password(mac)):
            return checkPassword(mac, key: key, from: peer, sessionBindings: sessionBindings) ? nil : .wrongPassword
        case (.password, _):
            return .wrongPassword
        }
    }

    /// Online guessing gets `passwordAttempts` wrong proofs per peer per
    /// `passwordAttemptWindow`; past that, proofs are refused unchecked, so
    /// even the right one fails until the window allows another attempt.
    private func checkPassword(_ mac: [UInt8], key: [UInt8], from peer: NodeID, sessionBindings: [[UInt8]]) -> Bool {
        let now = clock.now()
        guard attempts.wouldAllow(peer, now: now) else {
            stats.throttledPasswords += 1
            return false
        }
        for binding in sessionBindings where binding.count == RoomConstants.sessionBindingLength {
            let expected = AdmissionRequest.joinProof(roomKey: key, sessionBinding: binding, joiner: peer, room: room)
            if constantTimeEqual(mac, expected) { return true }
        }
        stats.failedPasswords += 1
        attempts.take(peer, now: now)
        return false
    }

    /// An invite for `invitee`, valid for `validFor` from now (wall clock).
    public func makeInvite(for invitee: NodeID, validFor: Duration) -> Invite {
        let now = clock.wallTime().milliseconds
        let (expires, overflow) = now.addingReportingOverflow(UInt64(max(0, validFor.nanosecondsClamped / 1_000_000)))
        return Invite(host: host, room: room, invitee: invitee, expiresAt: overflow ? .max : expires)
    }

    /// Whether `pass` is the room host's pass for `member` (the session's
    /// authenticated peer) in `room`.
    public static func verifyPass(_ pass: MembershipPass, room: RoomID, host: NodeID, member: NodeID) -> Bool {
        pass.isValid(room: room, host: host, member: member)
    }
}
