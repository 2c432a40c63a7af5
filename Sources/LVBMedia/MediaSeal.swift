import LVBCore
import LVBCrypto

/// The origin's Ed25519 signature over what it sends (lvbnode-protocol(7),
/// MEDIA): one seal per video frame, in a header extension of the frame's
/// first packet, covering the frame's packets (and any audio of a run it
/// closes); in a stream with video every audio packet carries a seal of its
/// own (n = 0: the carrier alone), so sound waits for no picture; in an
/// audio-only stream every `maxAudioHashes`-th audio packet carries a seal
/// over the run since the last one, itself included.
///
/// A seal binds the stream's scope (the room), the kind, the video frame
/// (its packet count and the digest of its packets' digests) and a run of
/// audio packets (the first one's sequence number and each one's 8-byte
/// hash). A packet's digest covers its RTP header fields, its CSRCs, every
/// header extension element but a seal, and its payload, so a relay can
/// change nothing a player uses without the seal failing; and no
/// sequence number or timestamp, which a replay would have to change.
///
/// Element layout (RFC 8285 two-byte form, id `videoID` or `audioID`):
/// ```
/// video: frame packets (2) | first audio seq (2) | n × audio hash (8) | signature (64)
/// audio:                     first audio seq (2) | n × audio hash (8) | signature (64)
/// ```
/// `n` follows from the element's length (0...`maxAudioHashes`). An audio
/// seal with n = 0 names its carrier alone (its audio seq is the carrier's
/// sequence number; it signs what a seal naming the carrier's hash would);
/// a video seal with n = 0 names no audio, and its audio seq is 0.
public struct MediaSeal: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        case video = 1
        case audio = 2
    }

    public var kind: Kind
    /// Video: the frame's packets, its first (the carrier) included.
    public var framePackets: UInt16
    /// The sequence number of the audio packet `audioHashes[0]` is of.
    public var audioFirstSeq: UInt16
    /// Consecutive audio packets' hashes (`audioHash`), from `audioFirstSeq` on.
    public var audioHashes: [UInt64]
    public var signature: [UInt8]

    /// Header extension ids (two-byte form: the elements are longer than 16 bytes).
    public static let videoID: UInt8 = 17
    public static let audioID: UInt8 = 18
    public static let signatureLength = 64
    /// Audio packets one seal names at most (80 ms); in an audio-only stream
    /// the run's last carries the seal.
    public static let maxAudioHashes = 4
    /// A stream is audio-only once this many audio packets (1 s) went out
    /// with no video frame between: its audio is then sealed in runs.
    public static let audioOnlyAfter = 50
    static let context = Array("lvbnode media seal 1".utf8)

    public init(kind: Kind, framePackets: UInt16 = 0, audioFirstSeq: UInt16 = 0, audioHashes: [UInt64] = [],
                signature: [UInt8] = []) {
        self.kind = kind
        self.framePackets = framePackets
        self.audioFirstSeq = audioFirstSeq
        self.audioHashes = audioHashes
        self.signature = signature
    }

    /// The bytes a first packet gives up to its seal beyond the capture-time
    /// element `rtpOverhead` counts: the largest video seal, and the capture
    /// time's element in two-byte form, padded (12 bytes of one-byte form → 2 + 8 + 2 + 102).
    public static let firstPacketReserve: Int = {
        let block = 2 + MediaConstants.RTP.captureTimeLength + 2 + encodedLength(.video, hashes: maxAudioHashes)
        return (block + 3) / 4 * 4 - 12
    }()

    static func encodedLength(_ kind: Kind, hashes: Int) -> Int {
        (kind == .video ? 4 : 2) + 8 * hashes + signatureLength
    }

    public var extensionID: UInt8 { kind == .video ? Self.videoID : Self.audioID }

    public func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: Self.encodedLength(kind, hashes: audioHashes.count))
        if kind == .video { w.write(framePackets) }
        w.write(audioFirstSeq)
        for h in audioHashes { w.write(h) }
        w.write(bytes: signature)
        return w.bytes
    }

    /// The seal `packet` carries, if any; a malformed one (or both kinds at once) throws.
    public static func of(_ packet: RTPPacket) throws(MediaError) -> MediaSeal? {
        let video = packet.extensions[videoID], audio = packet.extensions[audioID]
        switch (video, audio) {
        case (nil, nil): return nil
        case let (v?, nil): return try parse(v, kind: .video)
        case let (nil, a?):
            let seal = try parse(a, kind: .audio)
            if seal.audioHashes.isEmpty, seal.audioFirstSeq != packet.sequenceNumber {
                throw .malformed("an audio seal of its carrier alone naming another sequence number")
            }
            return seal
        case (_?, _?): throw .malformed("a packet with both a video and an audio seal")
        }
    }

    public static func parse(_ bytes: [UInt8], kind: Kind) throws(MediaError) -> MediaSeal {
        let fixed = kind == .video ? 4 : 2
        let rest = bytes.count - fixed - signatureLength
        guard rest >= 0, rest % 8 == 0, rest / 8 <= maxAudioHashes else {
            throw .malformed("media seal of \(bytes.count) bytes")
        }
        var r = ByteReader(bytes[...])
        let frame = kind == .video ? try r.mediaRead16("media seal") : 0
        if kind == .video, frame == 0 || Int(frame) > ReceiverConstants.maxPacketsPerFrame {
            throw .malformed("video seal over \(frame) packets")
        }
        let first = try r.mediaRead16("media seal")
        var hashes: [UInt64] = []
        for _ in 0..<(rest / 8) { hashes.append(try r.mediaRead64("media seal")) }
        let signature = Array(try r.mediaBytes(signatureLength, "media seal"))
        return MediaSeal(kind: kind, framePackets: frame, audioFirstSeq: first, audioHashes: hashes, signature: signature)
    }

    /// The audio run this seal names: `audioHashes` from `audioFirstSeq` on;
    /// an audio seal with none names `carrier` (its hash given) alone.
    public func namedAudio(carrier seq: UInt16, hash: UInt64) -> (first: UInt16, hashes: [UInt64]) {
        kind == .audio && audioHashes.isEmpty ? (seq, [hash]) : (audioFirstSeq, audioHashes)
    }

    /// What the signature signs: the context string, the kind, the scope,
    /// for video the frame's packet count and digest, then the audio run.
    static func message(kind: Kind, scope: [UInt8], framePackets: UInt16, frameDigest: [UInt8]?,
                        audioFirstSeq: UInt16, audioHashes: [UInt64]) -> [UInt8] {
        var w = ByteWriter(capacity: 128)
        w.write(bytes: context)
        w.write(kind.rawValue)
        w.write(UInt8(scope.count))
        w.write(bytes: scope)
        if kind == .video {
            w.write(framePackets)
            w.write(bytes: frameDigest ?? [])
        }
        w.write(audioFirstSeq)
        w.write(UInt8(audioHashes.count))
        for h in audioHashes { w.write(h) }
        return w.bytes
    }

    /// The signed message of this seal over a frame of that digest (video),
    /// or naming this audio run (`namedAudio`; the seal's own by default).
    public func message(scope: [UInt8], frameDigest: [UInt8]?, audio: (first: UInt16, hashes: [UInt64])? = nil) -> [UInt8] {
        let run = audio ?? (audioFirstSeq, audioHashes)
        return Self.message(kind: kind, scope: scope, framePackets: framePackets, frameDigest: frameDigest,
                            audioFirstSeq: run.first, audioHashes: run.hashes)
    }

    // MARK: Digests

    /// A packet's digest: BLAKE2b-256 of marker and payload type (1),
    /// sequence number (2), timestamp (4), SSRC (4), CSRC count (1) and the
    /// CSRCs, the count of extension elements other than seals (1) and each
    /// (id, length, data) in ascending id order, then the payload without padding.
    public static func packetDigest(_ p: RTPPacket) -> [UInt8] {
        var w = ByteWriter(capacity: 16 + 4 * p.csrcs.count + 16 + p.payload.count)
        w.write((p.marker ? 0x80 : 0) | p.payloadType)
        w.write(p.sequenceNumber)
        w.write(p.timestamp)
        w.write(p.ssrc)
        w.write(UInt8(p.csrcs.count))
        for c in p.csrcs { w.write(c) }
        let ids = p.extensions.keys.filter { $0 != videoID && $0 != audioID }.sorted()
        w.write(UInt8(ids.count))
        for id in ids {
            let value = p.extensions[id] ?? []
            w.write(id)
            w.write(UInt8(value.count))
            w.write(bytes: value)
        }
        w.write(bytes: p.payload)
        return Blake2b.hash(w.bytes, length: 32)
    }

    /// An audio packet's hash: the first 8 bytes of its digest, big-endian.
    public static func audioHash(_ digest: [UInt8]) -> UInt64 {
        digest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A video frame's digest: BLAKE2b-256 of its packets' digests in sequence order.
    public static func frameDigest(_ digests: [[UInt8]]) -> [UInt8] {
        Blake2b.hash(parts: digests, key: nil, length: 32)
    }
}
