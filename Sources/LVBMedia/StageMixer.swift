import LVBCore
import Synchronization

/// What the mixer makes of one host picture: the picture everyone else gets,
/// whether it must be a keyframe (the layout changed), and for each guest a
/// picture without that guest (mix-minus), at the return streams' size.
public struct VideoMix: Sendable {
    public var main: I420Frame
    public var keyframe: Bool
    public var returns: [(guest: UInt32, frame: I420Frame)]
}

/// The same for one 20 ms block of sound.
public struct AudioMix: Sendable {
    public var main: [Int16]
    public var returns: [(guest: UInt32, pcm: [Int16])]
}

/// The host's link-mic mixer: guests' decoded pictures and sound come in on
/// the node's loop; the host's encoders call `mixVideo`/`mixAudio` on their
/// threads with each captured picture and block. Each guest's sound and
/// pictures enter the mix aligned by their capture times: sound waits (once)
/// for pictures that arrive later, and a picture is shown no earlier than the
/// sound captured with it. A guest that stalls keeps its last picture (its
/// region freezes); it never holds up the host's own picture. Guests are
/// keyed by the video SSRC of the stream the host returns to them.
///
/// In a PK one "guest" is the other room's host (`addPartner`): the picture
/// then splits in two halves, this host and its own guests laid out in the
/// left half as they would be on the whole canvas, the other host's picture
/// in the right half; what goes back to the other host is the left half
/// alone (its own side, at half width), so neither host sees or hears itself.
public final class StageMixer: Sendable {
    private struct Guest {
        var order: Int
        var audioSSRC: UInt32
        var pictures: [(frame: I420Frame, capture: UInt64?)] = []
        var shown: I420Frame?
        var sound: [(pcm: [Int16], capture: UInt64?)] = []
        /// Capture time of the guest's latest picture, and of the sound last mixed.
        var pictureCapture: UInt64?
        var soundCapture: UInt64?
        var soundHeld = 0
    }

    private struct State {
        var guests: [UInt32: Guest] = [:]
        var next = 0
        var layout: StageLayout = .pip
        var layoutChanged = false
        var chosenLayout = false
        /// The other host in a PK, if one runs.
        var partner: UInt32?

        /// The layout that follows the number of this host's own guests.
        mutating func followGuests() {
            guard !chosenLayout else { return }
            layout = guests.count - (partner == nil ? 0 : 1) <= 1 ? .pip : .grid
        }
    }

    private let state = Mutex(State())
    private let compositor = Mutex(VideoCompositor())
    /// Draws a PK host's own half (its canvas differs from the whole picture's).
    private let halves = Mutex(VideoCompositor())
    private let audio = Mutex(AudioMixer<UInt32>())
    /// Size of the pictures returned to guests.
    public let returnSize: (width: Int, height: Int)

    /// `width`×`height`: the host's picture; returns are at most `MixConstants.returnMaxWidth` wide.
    public init(width: Int, height: Int) {
        let scale = min(1.0, Double(MixConstants.returnMaxWidth) / Double(max(1, width)))
        returnSize = (Int(Double(width) * scale) & ~1, Int(Double(height) * scale) & ~1)
    }

    // MARK: The node's loop

    /// Puts a guest in the mix (placed after those already in); `guest` and
    /// `audioSSRC` are the SSRCs of the stream returned to it.
    public func add(_ guest: UInt32, audioSSRC: UInt32) {
        state.withLock { s in
            guard s.guests[guest] == nil else { return }
            s.guests[guest] = Guest(order: s.next, audioSSRC: audioSSRC)
            s.next += 1
            s.layoutChanged = true
            s.followGuests()
        }
    }

    /// Puts the other host of a PK in the right half; `key` and `audioSSRC`
    /// are the SSRCs of the stream returned to it (this host's own half).
    /// One at a time: a second replaces the first.
    public func addPartner(_ key: UInt32, audioSSRC: UInt32) {
        if let old = partnerKey, old != key { remove(old) }
        state.withLock { s in
            guard s.guests[key] == nil else { return }
            s.guests[key] = Guest(order: -1, audioSSRC: audioSSRC)
            s.partner = key
            s.layoutChanged = true
        }
    }

    /// The key of the PK's other host, if one is in the mix.
    public var partnerKey: UInt32? { state.withLock { $0.partner } }

    /// Takes a guest out of the mix.
    public func remove(_ guest: UInt32) {
        state.withLock { s in
            guard s.guests.removeValue(forKey: guest) != nil else { return }
            if s.partner == guest { s.partner = nil }
            s.layoutChanged = true
            s.followGuests()
        }
        audio.withLock { $0.remove(guest) }
    }

    /// Chooses the layout (from then on it no longer follows the guest count).
    /// Returns false when it was that already.
    @discardableResult
    public func setLayout(_ layout: StageLayout) -> Bool {
        state.withLock { s in
            s.chosenLayout = true
            guard s.layout != layout else { return false }
            s.layout = layout
            s.layoutChanged = true
            return true
        }
    }

    public var layout: StageLayout { state.withLock { $0.layout } }
    /// The audio SSRC of the stream returned to `guest`.
    public func audioSSRC(of guest: UInt32) -> UInt32? { state.withLock { $0.guests[guest]?.audioSSRC } }
    /// This host's own guests (the PK's other host not counted).
    public var guestCount: Int { state.withLock { $0.guests.count - ($0.partner == nil ? 0 : 1) } }
    /// Blocks of `guest`'s sound waiting to be mixed.
    func queuedSound(_ guest: UInt32) -> Int { state.withLock { $0.guests[guest]?.sound.count ?? 0 } }

    /// A guest's decoded picture.
    public func video(_ guest: UInt32, _ frame: ReceivedVideoFrame) {
        state.withLock { s in
            guard s.guests[guest] != nil else { return }
            s.guests[guest]?.pictures.append((frame.image, frame.captureTime))
            if let c = frame.captureTime { s.guests[guest]?.pictureCapture = c }
            if let n = s.guests[guest]?.pictures.count, n > MixConstants.alignPictures {
                s.guests[guest]?.pictures.removeFirst(n - MixConstants.alignPictures)
            }
        }
    }

    /// A guest's decoded (or concealed) 20 ms block.
    public func audio(_ guest: UInt32, _ block: ReceivedAudioFrame) {
        state.withLock { s in
            guard s.guests[guest] != nil else { return }
            s.guests[guest]?.sound.append((block.pcm, block.captureTime))
            if let n = s.guests[guest]?.sound.count, n > MixConstants.alignBlocks {
                s.guests[guest]?.sound.removeFirst(n - MixConstants.alignBlocks)
            }
        }
    }

    // MARK: The encoders' threads

    /// Mixes the guests into the host's picture; nil with nobody on stage.
    public func mixVideo(_ host: I420Frame) throws(MediaError) -> VideoMix? {
        let (guests, partner, layout, changed) = state.withLock { s -> ([(UInt32, I420Frame?)], UInt32?, StageLayout, Bool) in
            guard !s.guests.isEmpty else { return ([], nil, s.layout, false) }
            var picked: [(UInt32, Int, I420Frame?)] = []
            for (key, var g) in s.guests {
                // The newest picture captured no later than the end of the
                // sound now heard from this guest (one picture of slack); all older ones go.
                let limit = g.soundCapture.map { $0 &+ MixConstants.blockNTP &+ MixConstants.pictureSlack }
                if let i = g.pictures.lastIndex(where: { p in limit.map { l in (p.capture ?? 0) <= l } ?? true }) {
                    g.shown = g.pictures[i].frame
                    g.pictures.removeFirst(i + 1)
                }
                s.guests[key] = g
                picked.append((key, g.order, g.shown))
            }
            defer { s.layoutChanged = false }
            return (picked.sorted { $0.1 < $1.1 }.map { ($0.0, $0.2) }, s.partner, s.layout, s.layoutChanged)
        }
        guard !guests.isEmpty else { return nil }
        if let partner {
            let other = guests.first { $0.0 == partner }?.1
            return try mixPK(host, own: guests.filter { $0.0 != partner }, partner: (partner, other), layout: layout, changed: changed)
        }
        return try compositor.withLock { c throws(MediaError) -> VideoMix in
            let main = try c.compose(host: host, guests: guests.map(\.1), layout: layout)
            var returns: [(guest: UInt32, frame: I420Frame)] = []
            for (key, _) in guests {
                let others = guests.filter { $0.0 != key }.map(\.1)
                let picture = others.isEmpty ? host : try c.compose(host: host, guests: others, layout: layout)
                returns.append((key, try picture.scaled(width: returnSize.width, height: returnSize.height)))
            }
            return VideoMix(main: main, keyframe: changed, returns: returns)
        }
    }

    /// A PK's picture: this host's side (itself and its own guests in
    /// `layout`) in the left half, the other host's in the right. The other
    /// host gets this side alone, at half width; each own guest gets the
    /// whole without itself.
    private func mixPK(_ host: I420Frame, own: [(UInt32, I420Frame?)], partner: (key: UInt32, picture: I420Frame?),
                       layout: StageLayout, changed: Bool) throws(MediaError) -> VideoMix {
        let half = (width: (host.width / 2) & ~1, height: host.height)
        func side(without guest: UInt32?) throws(MediaError) -> I420Frame {
            let guests = own.filter { $0.0 != guest }.map(\.1)
            return try halves.withLock { c throws(MediaError) in try c.compose(host: host, guests: guests, layout: layout, canvas: half) }
        }
        func whole(_ side: I420Frame) throws(MediaError) -> I420Frame {
            try compositor.withLock { c throws(MediaError) in
                try c.compose(host: side, guests: [partner.picture], layout: .split, canvas: (host.width, host.height))
            }
        }
        let mine = try side(without: nil)
        let main = try whole(mine)
        var returns: [(guest: UInt32, frame: I420Frame)] = [(partner.key, mine)]
        for (key, _) in own {
            let picture = try whole(try side(without: key))
            returns.append((key, try picture.scaled(width: returnSize.width, height: returnSize.height)))
        }
        return VideoMix(main: main, keyframe: changed, returns: returns)
    }

    /// Mixes the guests' sound with the host's block; nil with nobody on stage.
    public func mixAudio(_ host: [Int16]) -> AudioMix? {
        let blocks = state.withLock { s -> [UInt32: [Int16]]? in
            guard !s.guests.isEmpty else { return nil }
            var out: [UInt32: [Int16]] = [:]
            for (key, var g) in s.guests {
                // A backlog the pictures do not need (a burst from the guest's
                // jitter buffer) would delay this guest for good: skip it, so
                // at most `soundBacklog` blocks wait beyond what lip sync asks.
                while g.sound.count > MixConstants.soundBacklog,
                      let next = g.sound[1].capture, let p = g.pictureCapture, next &+ MixConstants.pictureSlack <= p {
                    g.sound.removeFirst()
                }
                guard let first = g.sound.first else { continue }
                // Hold the sound (once) while the pictures captured with it
                // have not arrived, up to `alignBlocks` blocks.
                let picturesBehind = g.pictureCapture.map { p in (first.capture ?? 0) > p &+ MixConstants.pictureSlack } ?? false
                if picturesBehind && g.soundHeld < MixConstants.alignBlocks && g.sound.count < MixConstants.alignBlocks {
                    g.soundHeld += 1
                    s.guests[key] = g
                    continue
                }
                g.sound.removeFirst()
                if let c = first.capture { g.soundCapture = c }
                out[key] = first.pcm
                s.guests[key] = g
            }
            // Guests with nothing to say this block still need their mix-minus.
            for key in s.guests.keys where out[key] == nil { out[key] = [] }
            return out
        }
        guard let blocks else { return nil }
        let mixed = audio.withLock { $0.mix(host: host, guests: blocks) }
        return AudioMix(main: mixed.everyone, returns: mixed.minus.map { ($0.key, $0.value) })
    }
}
