/// Records VP8 video and Opus audio as a WebM file (the Matroska subset WebM allows, in
/// EBML, RFC 8794), written by hand because libwebm is C++ only. Built to survive a kill:
/// the Segment has unknown size and each Cluster goes out whole, so a cut file still plays.
/// Closed normally into a regular file, it gets its Duration, and Cues (one per cluster
/// that starts with a keyframe) that a SeekHead at the front points to, so players seek.
public final class WebMWriter {
    /// Tuning: a cluster spanning this long is closed even without a video keyframe
    /// (well inside the ±32.767 s a SimpleBlock's 16-bit relative timestamp can reach).
    static let maxClusterMs: Int64 = 5000
    /// RFC 7845 §5.1: the encoder delay libopus reports (312 samples at 48 kHz = 6.5 ms).
    static let opusPreSkip = 312
    /// Matroska "Opus" codec mapping: SeekPreRoll of 80 ms, CodecDelay = pre-skip in ns.
    static let opusSeekPreRollNs: UInt64 = 80_000_000
    static let opusCodecDelayNs = UInt64(opusPreSkip) * 1_000_000_000 / 48000
    /// Tuning: for Duration, a video frame lasts until the next, but at most this long.
    static let maxVideoFrameMs: Int64 = 1000

    private struct TrackClock {
        let number: UInt64
        /// The last timestamp written, and where the track's media ends (for Duration), in ms.
        var last: Int64?
        var end: Double = 0
    }

    private struct Block {
        let track: UInt64
        let time: Int64
        let keyframe: Bool
        let data: [UInt8]
    }

    private let output: MediaOutputFile
    private var video: TrackClock?
    private var audio: TrackClock?
    private let durationOffset: Int64
    private let segmentSizeOffset: Int64
    private let segmentDataStart: Int64
    /// Where a Void keeps room for the SeekHead `close` writes.
    private let seekHeadOffset: Int64
    static let seekHeadRoom = 48
    /// Clusters that start with a keyframe: their time and position in the Segment.
    private var cuePoints: [(time: Int64, position: Int64)] = []

    /// The open cluster's blocks in arrival order, and the span of their timestamps.
    private var cluster: [Block] = []
    private var clusterSpan: ClosedRange<Int64> = 0...0
    private var lastClusterStart: Int64 = 0
    private var sawKeyframe = false
    private var closed = false

    /// Creates `path` ("-" = stdout) and writes the EBML header, Info and Tracks; video
    /// is track 1 and audio (Opus, `audioChannels` 1 or 2) the next. At least one must be given.
    /// With `createNew`, an existing file at `path` is an error, never overwritten.
    public init(path: String, video: (width: Int, height: Int)?, audioChannels: Int?, createNew: Bool = false) throws(MediaError) {
        let audio = audioChannels
        guard video != nil || audio != nil else { throw .invalidParameter("a WebM file needs a video or an audio track") }
        if let video {
            guard I420Frame.sizeRange.contains(video.width), I420Frame.sizeRange.contains(video.height) else {
                throw .invalidParameter("WebM video size \(video.width)x\(video.height): use edges in \(I420Frame.sizeRange)")
            }
        }
        if let audio, !(1...2).contains(audio) {
            throw .invalidParameter("WebM Opus channel count \(audio): use 1 or 2")
        }
        output = try MediaOutputFile(path: path, createNew: createNew)
        self.video = video.map { _ in TrackClock(number: 1) }
        self.audio = audio.map { _ in TrackClock(number: video == nil ? 1 : 2) }

        var h = EBMLBuffer()
        h.master(MatroskaID.ebml) {
            $0.uint(MatroskaID.ebmlVersion, 1)
            $0.uint(MatroskaID.ebmlReadVersion, 1)
            $0.uint(MatroskaID.ebmlMaxIDLength, 4)
            $0.uint(MatroskaID.ebmlMaxSizeLength, 8)
            $0.string(MatroskaID.docType, "webm")
            $0.uint(MatroskaID.docTypeVersion, 4)
            $0.uint(MatroskaID.docTypeReadVersion, 2)
        }
        h.id(MatroskaID.segment)
        segmentSizeOffset = Int64(h.count)
        h.append(EBMLBuffer.unknownSize8)  // 8 bytes, so close() can patch in the real size
        segmentDataStart = Int64(h.count)
        seekHeadOffset = Int64(h.count)
        h.append(Self.void(Self.seekHeadRoom))
        h.master(MatroskaID.info) {
            $0.uint(MatroskaID.timestampScale, 1_000_000)  // timestamps in ms
            $0.string(MatroskaID.muxingApp, "lvbnode")
            $0.string(MatroskaID.writingApp, "lvbnode")
            $0.float(MatroskaID.duration, 0)  // last, so its 8 bytes end the Info element
        }
        durationOffset = Int64(h.count - 8)
        let videoNumber = self.video?.number, audioNumber = self.audio?.number
        h.master(MatroskaID.tracks) { t in
            if let video, let videoNumber {
                t.master(MatroskaID.trackEntry) {
                    $0.uint(MatroskaID.trackNumber, videoNumber)
                    $0.uint(MatroskaID.trackUID, videoNumber)
                    $0.uint(MatroskaID.trackType, 1)
                    $0.string(MatroskaID.codecID, "V_VP8")
                    $0.master(MatroskaID.video) {
                        $0.uint(MatroskaID.pixelWidth, UInt64(video.width))
                        $0.uint(MatroskaID.pixelHeight, UInt64(video.height))
                    }
                }
            }
            if let audio, let audioNumber {
                t.master(MatroskaID.trackEntry) {
                    $0.uint(MatroskaID.trackNumber, audioNumber)
                    $0.uint(MatroskaID.trackUID, audioNumber)
                    $0.uint(MatroskaID.trackType, 2)
                    $0.string(MatroskaID.codecID, "A_OPUS")
                    $0.binary(MatroskaID.codecPrivate, Self.opusHead(channels: audio))
                    $0.uint(MatroskaID.codecDelay, Self.opusCodecDelayNs)
                    $0.uint(MatroskaID.seekPreRoll, Self.opusSeekPreRollNs)
                    $0.master(MatroskaID.audio) {
                        $0.float(MatroskaID.samplingFrequency, 48000)
                        $0.uint(MatroskaID.channels, UInt64(audio))
                    }
                }
            }
        }
        try output.write(h.bytes)
    }

    deinit { if !closed { try? close() } }

    /// RFC 7845 §5.1 identification header: "OpusHead", version 1, channel count,
    /// pre-skip (LE16), input sample rate (LE32), output gain (LE16) 0, mapping family 0.
    static func opusHead(channels: Int) -> [UInt8] {
        Array("OpusHead".utf8) + [1, UInt8(channels), UInt8(opusPreSkip & 0xFF), UInt8(opusPreSkip >> 8)]
            + [0x80, 0xBB, 0, 0]  // 48000
            + [0, 0, 0]
    }

    /// Adds one VP8 frame at `timestampMs` from the recording's start. Frames before the
    /// first keyframe are dropped, since nothing could decode them.
    public func writeVideo(_ frame: [UInt8], timestampMs: Int64, keyframe: Bool) throws(MediaError) {
        guard var track = video else { throw .invalidParameter("this WebM file has no video track") }
        guard sawKeyframe || keyframe else { return }
        sawKeyframe = true
        let previous = track.last
        let t = Self.advance(&track, to: timestampMs)
        track.end = Double(t + (previous.map { min(t - $0, Self.maxVideoFrameMs) } ?? 0))
        video = track
        try addBlock(track: track.number, at: t, keyframe: keyframe, startsCluster: keyframe, frame)
    }

    /// Adds one Opus packet at `timestampMs` from the recording's start.
    public func writeAudio(_ packet: [UInt8], timestampMs: Int64) throws(MediaError) {
        guard var track = audio else { throw .invalidParameter("this WebM file has no audio track") }
        let t = Self.advance(&track, to: timestampMs)
        track.end = Double(t) + (Self.opusDurationMs(packet) ?? 20)
        audio = track
        try addBlock(track: track.number, at: t, keyframe: true, startsCluster: false, packet)
    }

    /// Writes the last cluster and, when the file is seekable, patches Duration and the
    /// Segment size; then closes the file. Later writes throw.
    public func close() throws(MediaError) {
        guard !closed else { return }
        closed = true
        defer { output.close() }
        try flushCluster()
        guard output.isSeekable else { return }
        let durationMs = max(video?.end ?? 0, audio?.end ?? 0)
        try output.patch(EBMLBuffer.float64(durationMs), at: durationOffset)
        if !cuePoints.isEmpty, let track = (video ?? audio)?.number {
            let cuesPosition = output.position - segmentDataStart
            var cues = EBMLBuffer()
            cues.master(MatroskaID.cues) { c in
                for point in cuePoints {
                    c.master(MatroskaID.cuePoint) {
                        $0.uint(MatroskaID.cueTime, UInt64(point.time))
                        $0.master(MatroskaID.cueTrackPositions) {
                            $0.uint(MatroskaID.cueTrack, track)
                            $0.uint(MatroskaID.cueClusterPosition, UInt64(point.position))
                        }
                    }
                }
            }
            try output.write(cues.bytes)
            var head = EBMLBuffer()
            head.master(MatroskaID.seekHead) { h in
                h.master(MatroskaID.seek) {
                    $0.binary(MatroskaID.seekID, EBMLBuffer.bigEndian(UInt64(MatroskaID.cues), width: 4))
                    $0.uint(MatroskaID.seekPosition, UInt64(cuesPosition))
                }
            }
            try output.patch(head.bytes + Self.void(Self.seekHeadRoom - head.count), at: seekHeadOffset)
        }
        let segmentSize = UInt64(output.position - segmentDataStart)
        try output.patch(EBMLBuffer.vint(segmentSize, width: 8), at: segmentSizeOffset)
    }

    /// A Void element `total` bytes long (at least 2), its size in one byte.
    static func void(_ total: Int) -> [UInt8] {
        [UInt8(MatroskaID.void), 0x80 | UInt8(total - 2)] + [UInt8](repeating: 0, count: total - 2)
    }

    /// Keeps a track's timestamps non-decreasing (a late one takes the previous value).
    private static func advance(_ track: inout TrackClock, to timestampMs: Int64) -> Int64 {
        let t = max(timestampMs, track.last ?? 0, 0)
        track.last = t
        return t
    }

    /// RFC 6716 §3.1: an Opus packet's length from its TOC byte: the frame size by
    /// config (SILK 0–11, hybrid 12–15, CELT 16–31), the frame count by code.
    static func opusDurationMs(_ packet: [UInt8]) -> Double? {
        guard let toc = try? OpusPayload.toc(of: packet[...]) else { return nil }
        let c = Int(toc.config)
        let frameMs: Double = c < 12 ? [10, 20, 40, 60][c % 4] : c < 16 ? [10, 20][c % 2] : [2.5, 5, 10, 20][c % 4]
        let frames = toc.frameCountCode == 0 ? 1 : toc.frameCountCode < 3 ? 2 : Int(packet[1] & 0x3F)
        return frameMs * Double(frames)
    }

    /// Queues a block in the open cluster, first writing that cluster out when the block
    /// is a video keyframe or would stretch the cluster past `maxClusterMs`.
    private func addBlock(track: UInt64, at t: Int64, keyframe: Bool, startsCluster: Bool,
                          _ data: [UInt8]) throws(MediaError) {
        guard !closed else { throw .invalidParameter("WebM write after close") }
        if !cluster.isEmpty {
            let span = max(clusterSpan.upperBound, t) - min(clusterSpan.lowerBound, t)
            if startsCluster || span >= Self.maxClusterMs { try flushCluster() }
        }
        clusterSpan = cluster.isEmpty ? t...t : min(clusterSpan.lowerBound, t)...max(clusterSpan.upperBound, t)
        cluster.append(Block(track: track, time: t, keyframe: keyframe, data: data))
    }

    /// Writes the open cluster in one write. Its Timestamp is its earliest block's, so a
    /// block of a track running behind the other (audio captured late) keeps its own time
    /// at a non-negative offset; only a block behind the previous cluster is moved up to it.
    ///
    /// Matroska SimpleBlock: track number (VINT), timestamp relative to the Cluster's
    /// (signed 16-bit, big-endian), flags (0x80 = keyframe, no lacing), then the frame.
    private func flushCluster() throws(MediaError) {
        guard !cluster.isEmpty else { return }
        let start = max(clusterSpan.lowerBound, lastClusterStart)
        lastClusterStart = start
        var body = EBMLBuffer()
        body.uint(MatroskaID.timestamp, UInt64(start))
        for block in cluster {
            let relative = UInt16(bitPattern: Int16(min(max(0, block.time - start), Int64(Int16.max))))
            body.id(MatroskaID.simpleBlock)
            let header = EBMLBuffer.vint(block.track) + [UInt8(relative >> 8), UInt8(relative & 0xFF)]
            body.append(EBMLBuffer.vint(UInt64(header.count + 1 + block.data.count)))
            body.append(header + [block.keyframe ? 0x80 : 0])
            body.append(block.data)
        }
        // A cluster a player can start at: a video keyframe first, or any of an audio-only file.
        if let first = cluster.first, first.keyframe, video == nil || first.track == video?.number {
            cuePoints.append((start, output.position - segmentDataStart))
        }
        var e = EBMLBuffer()
        e.id(MatroskaID.cluster)
        e.append(EBMLBuffer.vint(UInt64(body.count)))
        e.append(body.bytes)
        cluster = []
        try output.write(e.bytes)
    }
}
