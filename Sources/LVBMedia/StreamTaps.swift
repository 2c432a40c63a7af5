import LVBCore

/// Taps on a node's streams, by origin, for any number of subscribers
/// (`--rtp-out`, `--egress`, a UI, a test): every packet of the stream as
/// this node has it — its own as published, another's once its seals let
/// it through. Each tap is its own: adding one replaces none.
public final class StreamTaps<Origin: Hashable & Sendable> {
    /// A tap to take away again (`remove`).
    public struct Tap: Hashable, Sendable {
        public let origin: Origin
        fileprivate let id: Int
    }

    private var taps: [Origin: [(id: Int, body: (RTPPacket) -> Void)]] = [:]
    private var nextID = 0
    /// The taps on `origin` changed: its stream's handler is set anew (`handler(for:)`).
    public var onChange: ((Origin) -> Void)?

    public init() {}

    /// Hands `body` every packet of `origin`'s stream from now on.
    @discardableResult
    public func add(_ origin: Origin, _ body: @escaping (RTPPacket) -> Void) -> Tap {
        nextID += 1
        taps[origin, default: []].append((nextID, body))
        onChange?(origin)
        return Tap(origin: origin, id: nextID)
    }

    /// `tap` moved to `origin`'s stream (a new room's host), or left as it
    /// is when already there; a first tap when there is none.
    public func retarget(_ tap: Tap?, to origin: Origin, _ body: @escaping (RTPPacket) -> Void) -> Tap {
        if let tap {
            if tap.origin == origin { return tap }
            remove(tap)
        }
        return add(origin, body)
    }

    public func remove(_ tap: Tap) {
        taps[tap.origin]?.removeAll { $0.id == tap.id }
        if taps[tap.origin]?.isEmpty == true { taps[tap.origin] = nil }
        onChange?(tap.origin)
    }

    /// What `origin`'s stream calls with each packet (nil: nobody taps it,
    /// so the stream does nothing per packet for taps).
    public func handler(for origin: Origin) -> ((RTPPacket) -> Void)? {
        guard let list = taps[origin] else { return nil }
        if list.count == 1 { return list[0].body }
        return { packet in for t in list { t.body(packet) } }
    }
}
