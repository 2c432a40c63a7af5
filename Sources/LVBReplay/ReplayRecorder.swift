import LVBCore
import LVBCrypto
import LVBGossip

/// `lvbnode host --replay`: keeps the room's outgoing stream as the host
/// sends it (the mix when guests are on stage), no re-encoding, in segments
/// cut at keyframes, and signs the manifest again at each cut, so what is
/// on disk is always a replay anyone can check. Within a disk budget for
/// everything the node holds: the oldest other replays go first; when this
/// one alone would pass it, recording stops and says so. A write that fails
/// (disk full) stops it too, with one line; what was kept stays playable.
/// Lives on the node's loop.
public final class ReplayRecorder {
    public enum Event: Sendable, Equatable {
        /// The first frame came: the replay has its id.
        case started(ReplayID, directory: String)
        /// An older replay was deleted to keep within the budget.
        case evicted(ReplayID)
        /// Recording stopped before the live ended; the text says why and what to do.
        case stopped(String)
    }

    public var onEvent: ((Event) -> Void)?
    public let library: ReplayLibrary
    public private(set) var manifest: ReplayManifest?
    public private(set) var stopped = false

    private let identity: Identity
    private let room: RoomID
    private let title: String
    private let video: (width: Int, height: Int)?
    private let audioChannels: Int
    private let budget: Int64
    private let isPrivate: Bool
    /// Bytes the library holds, kept as segments are written.
    private var held: Int64
    private var startMicros: UInt64?
    private var open: [ReplayFrame] = []
    private var openBytes = 0
    private var last: [ReplayFrame.Kind: UInt32] = [:]

    /// Checks the directory (created if missing, writable) and the free space
    /// up front, so a mistake fails before the room starts.
    public init(library: ReplayLibrary, budget: Int64, identity: Identity, room: RoomID, title: String,
                video: (width: Int, height: Int)?, audioChannels: Int, isPrivate: Bool = false) throws(ReplayError) {
        try ReplayFiles.prepareDirectory(library.root, option: "--replay-dir")
        if let free = ReplayFiles.freeBytes(library.root), free < ReplayConstants.minimumFreeSpace {
            throw .file("--replay-dir \(library.root): only \(free >> 20) MB free on its disk (\(ReplayConstants.minimumFreeSpace >> 20) MB needed); free some, choose another directory or use --no-replay")
        }
        self.library = library
        self.budget = budget
        self.identity = identity
        self.room = room
        self.title = title
        self.video = video
        self.audioChannels = audioChannels
        self.isPrivate = isPrivate
        held = library.totalBytes()
    }

    public var id: ReplayID? { manifest?.id }

    /// One VP8 frame as published, captured at `captureMicros` (Unix µs).
    public func video(_ frame: [UInt8], keyframe: Bool, captureMicros: UInt64) {
        guard video != nil else { return }
        add(.video, keyframe: keyframe, captureMicros: captureMicros, frame)
    }

    /// One Opus packet as published.
    public func audio(_ packet: [UInt8], captureMicros: UInt64) {
        guard audioChannels > 0 else { return }
        add(.audio, keyframe: false, captureMicros: captureMicros, packet)
    }

    /// The live ended: the open segment is kept and the manifest says ended.
    public func finish() {
        guard !stopped else { return }
        cut(endMs: (last.values.max() ?? 0) + 20, ended: true)
        stopped = true
    }

    private func add(_ kind: ReplayFrame.Kind, keyframe: Bool, captureMicros: UInt64, _ payload: [UInt8]) {
        guard !stopped, !payload.isEmpty else { return }
        let limit = kind == .video ? ReplaySegment.maxVideoPayload : ReplaySegment.maxAudioPayload
        guard payload.count <= limit else { return }
        if startMicros == nil {
            // A replay starts at a picture that decodes (or at the sound, without pictures).
            guard video == nil ? kind == .audio : keyframe else { return }
            begin(at: captureMicros)
        }
        guard let start = startMicros else { return }
        var ms = UInt32(clamping: (captureMicros > start ? captureMicros - start : 0) / 1000)
        ms = max(ms, last[kind] ?? 0)
        last[kind] = ms
        if let first = open.first {
            let span = ms > first.ms ? ms - first.ms : 0
            if (keyframe && span >= ReplayConstants.segmentTargetMs) || span >= ReplayConstants.segmentMaxMs
                || openBytes + payload.count + ReplaySegment.recordHeaderSize > ReplayConstants.segmentMaxBytes - ReplaySegment.headerSize {
                cut(endMs: max(ms, first.ms), ended: false)
                if stopped { return }
            }
        }
        open.append(ReplayFrame(kind: kind, isKeyframe: keyframe, ms: ms, payload: payload))
        openBytes += payload.count + ReplaySegment.recordHeaderSize
    }

    private func begin(at micros: UInt64) {
        startMicros = micros
        let m = ReplayManifest(room: room, host: identity.nodeID, startedMs: micros / 1000, title: title,
                               width: UInt16(clamping: video?.width ?? 0), height: UInt16(clamping: video?.height ?? 0),
                               audioChannels: UInt8(clamping: audioChannels), isPrivate: isPrivate)
        manifest = m
        do {
            try library.storeManifest(m.signed(by: identity), id: m.id)
        } catch {
            stop("replay stopped: \(error)")
            return
        }
        onEvent?(.started(m.id, directory: library.directory(of: m.id)))
    }

    /// Writes the open segment (its frames end at `endMs`) and the manifest signed again.
    private func cut(endMs: UInt32, ended: Bool) {
        guard var m = manifest else { return }
        if let first = open.first {
            let index = m.segments.count
            let bytes = ReplaySegment.encode(index: UInt32(index), open)
            guard makeRoom(for: Int64(bytes.count), keeping: m.id) else { return }
            let startMs = max(first.ms, m.durationMs)
            m.segments.append(.init(startMs: startMs, durationMs: max(endMs, startMs) - startMs, length: UInt32(bytes.count),
                                    startsWithKeyframe: video == nil || open.first { $0.kind == .video }?.isKeyframe == true,
                                    hash: Blake2b.hash(bytes, length: 32)))
            m.ended = ended
            do {
                try library.store(m.signed(by: identity), id: m.id, segment: index, bytes)
            } catch {
                stop("replay stopped: \(error); the \(m.segments.count - 1) segments before are kept")
                return
            }
            held += Int64(bytes.count)
        } else if ended {
            m.ended = true
            try? library.storeManifest(m.signed(by: identity), id: m.id)
        }
        manifest = m
        open = []
        openBytes = 0
    }

    /// Makes room for `bytes` within the budget, deleting the oldest other
    /// replays; false (and recording stopped) when this one alone would pass it.
    private func makeRoom(for bytes: Int64, keeping id: ReplayID) -> Bool {
        if held + bytes <= budget { return true }
        let (fits, evicted, total) = library.makeRoom(for: bytes, keeping: id, budget: budget)
        held = total
        for old in evicted { onEvent?(.evicted(old)) }
        if fits { return true }
        manifest?.ended = true
        if let m = manifest { try? library.storeManifest(m.signed(by: identity), id: m.id) }
        stop("replay stopped at its disk budget of \(budget >> 20) MB after \(Double(manifest?.durationMs ?? 0) / 1000) s; the live goes on (raise --replay-budget to keep more)")
        return false
    }

    private func stop(_ why: String) {
        stopped = true
        open = []
        onEvent?(.stopped(why))
    }
}
