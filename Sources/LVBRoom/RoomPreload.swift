import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTransport

/// A room next to the one this node watches, kept ready for a quick switch
/// (the preloading of short-video apps, without a cloud): a session with its
/// host, admission (the host's pass, so entering costs no round trip) and a
/// trickle subscription to the host's stream — its keyframes only — so the
/// switch shows the latest picture at once. It publishes nothing to the
/// room: the node is not a member until it switches there.
public final class RoomPreload {
    public let room: RoomID
    public let host: NodeID
    /// The host's pass for this node, once it let us in.
    public private(set) var pass: MembershipPass?
    /// The keyframes-only subscription, once admitted.
    public private(set) var preview: PreviewReceiver?
    /// The host's seals over its keyframes: only what it signed is kept to show.
    private var checker: SealChecker?
    /// The host refused us (a private room, a kick): nothing more is asked.
    public private(set) var denied: AdmissionDenial?
    /// When the preload began.
    public let since: Instant

    private let trickle: Bool
    private let core: TransportCore
    private let clock: Clock
    private let random: RandomSource
    private var lastRequest: Instant?
    /// The node reported it ready.
    var reported = false

    /// Preloads `room` hosted by `host`; the session is the owner's to dial.
    /// `trickle`: subscribe to its keyframes (a node that shows no picture does not).
    public init(room: RoomID, host: NodeID, trickle: Bool, core: TransportCore, clock: Clock, random: RandomSource) {
        self.trickle = trickle
        self.room = room
        self.host = host
        self.core = core
        self.clock = clock
        self.random = random
        since = clock.now()
        if core.isEstablished(with: host) { requestAdmission() }
    }

    /// The latest complete keyframe of the host's stream, as RTP packets.
    public var keyframe: [[UInt8]]? { preview?.latestKeyframe?.packets }

    /// Ready: admitted, with a picture to show at once (if it shows pictures).
    public var isReady: Bool { pass != nil && (keyframe != nil || !trickle) }

    /// Whether `event` belongs to this preload rather than to the room the
    /// node is in (`current` hears the peer: its messages are that room's,
    /// except an admission answer about this room).
    func claims(_ event: TransportEvent, current: RoomNode) -> Bool {
        guard case let .message(peer, channel, payload) = event, peer == host else { return false }
        if !current.hears(peer) { return true }
        guard channel == .room, case .response(let r)? = (try? RoomMessage.parse(payload))?.as(AdmissionMessage.self) else { return false }
        return r.room == room
    }

    /// A transport event for this preload (claimed), or one every part sees.
    func handle(_ event: TransportEvent) {
        switch event {
        case .established(let info) where info.id == host:
            if pass == nil { requestAdmission() }
        case let .message(peer, .room, payload) where peer == host:
            guard case .response(let r)? = (try? RoomMessage.parse(payload))?.as(AdmissionMessage.self), r.room == room else { return }
            admission(r.result)
        case let .message(peer, .rtp, payload) where peer == host:
            guard let preview, let checker, let packet = try? RTPPacket.parse(payload) else { return }
            for case .video(let packets) in checker.receive(packet, now: clock.now()) {
                for p in packets { preview.receiveRTP(p.serialized()[...]) }
            }
        case .gone(let peer, _) where peer == host:
            // A new session needs a new subscription (and the host may have restarted).
            pass = nil
            preview = nil
            checker = nil
        default:
            break
        }
    }

    private func admission(_ result: AdmissionResult) {
        switch result {
        case .admitted(let theirPass):
            // The host also shows its own pass to every new session: not ours.
            guard pass == nil, AdmissionPolicy.verifyPass(theirPass, room: room, host: host, member: core.nodeID) else { return }
            pass = theirPass
            guard trickle else { return }
            let receiver = PreviewReceiver(clock: clock, ssrc: random.uint32(), maxDatagram: core.maxPayload)
            receiver.sendFeedback = { [unowned core, host] bytes in try? core.send(bytes, channel: .rtcp, to: host) }
            preview = receiver
            checker = SealChecker(signer: host, scope: room.bytes)
            receiver.subscribe()
        case .denied(let reason):
            if pass == nil { denied = reason }
        }
    }

    /// Asks again until admitted; keeps the trickle subscription up.
    func tick() {
        preview?.tick()
        checker?.expire(now: clock.now())
        guard pass == nil, denied == nil, core.isEstablished(with: host) else { return }
        if let last = lastRequest, clock.now() - last < RoomConstants.admissionRetry { return }
        requestAdmission()
    }

    private func requestAdmission() {
        lastRequest = clock.now()
        let request = RoomMessage.admission(.request(AdmissionRequest(room: room, proof: .none)))
        try? core.send(request.encoded, channel: .room, to: host)
    }
}
