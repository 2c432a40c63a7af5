import LVBCore

/// What a receive pipeline lets through of what arrives (`StreamReceiver`),
/// and what a relay that decodes nothing checks of what it passes on: the
/// origin's seals (`SealChecker`), always, on every node. A test of the
/// pipeline alone, with an unsealed stream, gives it `AdmitAll`.
public protocol MediaAdmission: AnyObject {
    /// One packet of the stream as it arrived: what may go on now (and what
    /// was refused). `fromOrigin`: it came over a session with the stream's
    /// origin itself, whose authentication already says who sent it.
    func receive(_ packet: RTPPacket, now: Instant, fromOrigin: Bool) -> [SealOutput]
    /// What waited (for the room's scope) and may go on now.
    func retry(now: Instant) -> [SealOutput]
    /// Drops what waited too long; with the node's tick.
    func expire(now: Instant)
    /// Another node feeds the stream from now on.
    func feederChanged()
    /// When media last went through that was not a copy of what had.
    var lastFresh: Instant? { get }
    var stats: SealCheckerStats { get }
}

extension MediaAdmission {
    /// A packet that came through a relay (or from nobody known): checked by its seal.
    public func receive(_ packet: RTPPacket, now: Instant) -> [SealOutput] { receive(packet, now: now, fromOrigin: false) }
}

extension SealChecker: MediaAdmission {}

/// Lets every video and audio packet through as it comes: for tests of
/// the receive pipeline with an unsealed stream. No node runs one.
public final class AdmitAll: MediaAdmission {
    public private(set) var lastFresh: Instant?
    public private(set) var stats = SealCheckerStats()

    public init() {}

    public func receive(_ packet: RTPPacket, now: Instant, fromOrigin: Bool) -> [SealOutput] {
        lastFresh = now
        switch packet.payloadType {
        case MediaConstants.videoPayloadType:
            stats.verifiedFrames += packet.marker ? 1 : 0
            return [.video([packet])]
        case MediaConstants.audioPayloadType:
            stats.verifiedAudio += 1
            return [.audio(packet)]
        default: return []
        }
    }

    public func retry(now: Instant) -> [SealOutput] { [] }
    public func expire(now: Instant) {}
    public func feederChanged() {}
}
