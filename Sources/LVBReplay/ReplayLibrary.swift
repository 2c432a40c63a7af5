import LVBCore
import LVBMedia

/// The replays a node holds, one directory each under `root` (by default
/// the node's home, `replays/`): its signed manifest and the segments it
/// has, `000000.seg` on.
public final class ReplayLibrary {
    /// A replay held here: its manifest, which of its segments are on disk
    /// and how many bytes they take.
    public struct Held: Sendable {
        public var manifest: ReplayManifest
        /// The manifest's card (what a room list shows), checked with it.
        public var card: ReplayCard
        public var present: [Bool]
        public var bytes: Int64
        public var isComplete: Bool { present.allSatisfy { $0 } }
        public var heldSegments: Int { present.count { $0 } }
    }

    public let root: String
    /// Manifests found unreadable or forged by the last `list` (left alone, never served).
    public private(set) var unreadable: [String] = []

    public init(root: String) {
        self.root = root
    }

    static let manifestName = "manifest"
    static let manifestLimit = 128 + ReplayConstants.maxSegments * ReplayManifest.segmentSize + 64

    public func directory(of id: ReplayID) -> String { root + "/" + id.text }

    static func segmentName(_ index: Int) -> String {
        let digits = String(index)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits + ".seg"
    }

    /// Creates the directory if missing; checks it is a writable directory.
    public static func prepare(_ root: String) throws(ReplayError) {
        try ReplayFiles.prepareDirectory(root, option: "--replay-dir")
    }

    /// Every replay held, newest first.
    public func list() -> [Held] {
        unreadable = []
        var held: [Held] = []
        for name in ReplayFiles.entries(root) where ReplayFiles.isDirectory(root + "/" + name) {
            guard let id = try? ReplayID(text: name) else { continue }
            do {
                held.append(try replay(id))
            } catch {
                unreadable.append("\(root)/\(name): \(error)")
            }
        }
        return held.sorted { $0.manifest.startedMs > $1.manifest.startedMs }
    }

    /// One replay held here, its manifest checked.
    public func replay(_ id: ReplayID) throws(ReplayError) -> Held { try read(id).held }

    /// One replay held here and its manifest's signed bytes.
    func read(_ id: ReplayID) throws(ReplayError) -> (held: Held, manifest: [UInt8]) {
        let dir = directory(of: id)
        guard ReplayFiles.isDirectory(dir) else { throw .unknown(id.text) }
        let bytes = try ReplayFiles.read(dir + "/" + Self.manifestName, limit: Self.manifestLimit)
        let (manifest, card) = try ReplayManifest.parseWithCard(bytes[...])
        guard manifest.id == id else { throw .forged("\(dir): holds the manifest of replay \(manifest.id.text)") }
        var total = Int64(bytes.count)
        let present = manifest.segments.indices.map { i in
            let size = ReplayFiles.size(dir + "/" + Self.segmentName(i))
            total += size
            return size == Int64(manifest.segments[i].length)
        }
        return (Held(manifest: manifest, card: card, present: present, bytes: total), bytes)
    }

    /// The cards of the replays held here whole, newest first.
    public func cards() -> [ReplayCard] {
        list().filter(\.isComplete).map(\.card)
    }

    /// Segment `index` of a replay held here, checked against its manifest.
    public func segment(_ held: Held, _ index: Int) throws(ReplayError) -> [UInt8] {
        guard held.present.indices.contains(index), held.present[index] else {
            throw .file("segment \(index) of replay \(held.manifest.id.text) is not held here")
        }
        let bytes = try ReplayFiles.read(directory(of: held.manifest.id) + "/" + Self.segmentName(index),
                                         limit: ReplayConstants.segmentMaxBytes)
        try held.manifest.check(segment: index, bytes)
        return bytes
    }

    /// Keeps a segment (already checked against `manifest`) and the manifest.
    func store(_ manifest: [UInt8], id: ReplayID, segment index: Int, _ bytes: [UInt8]) throws(ReplayError) {
        let dir = directory(of: id)
        if !ReplayFiles.isDirectory(dir) { try ReplayFiles.prepareDirectory(dir, option: "replay") }
        try ReplayFiles.writeAtomically(dir + "/" + Self.segmentName(index), bytes)
        try ReplayFiles.writeAtomically(dir + "/" + Self.manifestName, manifest)
    }

    func storeManifest(_ manifest: [UInt8], id: ReplayID) throws(ReplayError) {
        let dir = directory(of: id)
        if !ReplayFiles.isDirectory(dir) { try ReplayFiles.prepareDirectory(dir, option: "replay") }
        try ReplayFiles.writeAtomically(dir + "/" + Self.manifestName, manifest)
    }

    static let thumbnailName = "thumbnail"
    /// A thumbnail file: seq (8) ‖ the host-signed thumbnail's bytes.
    public static let thumbnailLimit = 8 + 64 * 1024

    /// Keeps the live's latest thumbnail with replay `id`, as the host
    /// signed it (its seq and bytes; this library does not read them).
    public func storeThumbnail(_ id: ReplayID, seq: UInt64, blob: [UInt8]) throws(ReplayError) {
        let dir = directory(of: id)
        guard ReplayFiles.isDirectory(dir) else { throw .unknown(id.text) }
        var w = ByteWriter(capacity: 8 + blob.count)
        w.write(seq)
        w.write(bytes: blob)
        guard w.bytes.count <= Self.thumbnailLimit else { throw .file("a thumbnail of \(w.bytes.count) bytes is over \(Self.thumbnailLimit)") }
        try ReplayFiles.writeAtomically(dir + "/" + Self.thumbnailName, w.bytes)
    }

    /// The thumbnail kept with replay `id`, if any: its seq and the host-signed bytes.
    public func thumbnail(_ id: ReplayID) -> (seq: UInt64, blob: [UInt8])? {
        guard let bytes = try? ReplayFiles.read(directory(of: id) + "/" + Self.thumbnailName, limit: Self.thumbnailLimit) else { return nil }
        var r = ByteReader(bytes)
        guard let seq = try? r.readUInt64(), r.remaining > 0 else { return nil }
        return (seq, Array(r.readRest()))
    }

    public func delete(_ id: ReplayID) throws(ReplayError) {
        let dir = directory(of: id)
        guard ReplayFiles.isDirectory(dir) else { throw .unknown(id.text) }
        try ReplayFiles.removeDirectory(dir)
    }

    /// Makes room for `bytes` more within `budget` by deleting the oldest
    /// replays other than `id`: whether it fits now, what was deleted, and
    /// the bytes held after.
    public func makeRoom(for bytes: Int64, keeping id: ReplayID, budget: Int64) -> (fits: Bool, evicted: [ReplayID], held: Int64) {
        var held = totalBytes()
        var evicted: [ReplayID] = []
        for old in list().filter({ $0.manifest.id != id }).reversed() where held + bytes > budget {
            guard (try? delete(old.manifest.id)) != nil else { continue }
            held -= old.bytes
            evicted.append(old.manifest.id)
        }
        held = totalBytes()
        return (held + bytes <= budget, evicted, held)
    }

    /// Keeps a segment fetched from others (checked against `manifest`,
    /// whose signed bytes are kept beside it) within `budget`.
    public func keep(_ manifestBytes: [UInt8], manifest: ReplayManifest, segment index: Int, _ bytes: [UInt8],
                     budget: Int64) throws(ReplayError) -> [ReplayID] {
        try manifest.check(segment: index, bytes)
        let (fits, evicted, _) = makeRoom(for: Int64(bytes.count + manifestBytes.count), keeping: manifest.id, budget: budget)
        guard fits else { throw .file("--replay-budget: no room to keep segment \(index) of replay \(manifest.id.text)") }
        try store(manifestBytes, id: manifest.id, segment: index, bytes)
        return evicted
    }

    /// Bytes every replay held here takes (manifests and segments).
    public func totalBytes() -> Int64 {
        ReplayFiles.entries(root).reduce(0) { sum, name in
            let dir = root + "/" + name
            return sum + ReplayFiles.entries(dir).reduce(0) { $0 + ReplayFiles.size(dir + "/" + $1) }
        }
    }

    /// Writes a replay held whole as a WebM file (no re-encoding) with its
    /// duration and an index of its keyframes, so players can seek in it.
    /// Every segment is checked against the manifest first.
    public func export(_ id: ReplayID, to path: String) throws(ReplayError) -> (durationMs: UInt32, frames: Int) {
        let held = try replay(id)
        let m = held.manifest
        guard !m.segments.isEmpty else { throw .file("replay \(id.text) holds no picture or sound yet") }
        guard held.isComplete else {
            throw .file("replay \(id.text): \(held.heldSegments) of \(m.segments.count) segments are held here; play it to fetch the rest")
        }
        let video = m.width > 0 ? (Int(m.width), Int(m.height)) : nil
        let webm: WebMWriter
        do {
            webm = try WebMWriter(path: path, video: video, audioChannels: m.audioChannels > 0 ? Int(m.audioChannels) : nil)
        } catch { throw .file(error.description) }
        var frames = 0
        for i in m.segments.indices {
            for f in try ReplaySegment.parse(try segment(held, i)[...], index: UInt32(i)) {
                do {
                    switch f.kind {
                    case .video where video != nil: try webm.writeVideo(f.payload, timestampMs: Int64(f.ms), keyframe: f.isKeyframe)
                    case .audio where m.audioChannels > 0: try webm.writeAudio(f.payload, timestampMs: Int64(f.ms))
                    default: continue
                    }
                } catch { throw .file("\(path): \(error)") }
                frames += 1
            }
        }
        do { try webm.close() } catch { throw .file("\(path): \(error)") }
        return (m.durationMs, frames)
    }
}
