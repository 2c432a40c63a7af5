import LVBCore

/// What an origin's sealer did, for `stats` lines and the bench.
public struct SealerStats: Sendable, Equatable {
    public var videoSeals = 0
    public var audioSeals = 0
    /// Bytes the seals added on the wire (the elements and what they cost the extension block).
    public var bytesAdded = 0
}

/// Seals what one origin publishes (`MediaSeal`), after its packets have
/// their final numbering: each video frame's first packet gets a seal over
/// the frame. While the stream has video (a frame within the last
/// `MediaSeal.audioOnlyAfter` audio packets), each audio packet gets a seal
/// of its own, so a relayed viewer plays it as it comes; in an audio-only
/// stream the `maxAudioHashes`-th audio packet since the last seal gets one
/// over the run (the bytes of a seal a packet would cost a talk or radio
/// room about half its stream; see lvbnode-protocol(7), Seals). A frame that
/// ends an audio-only run names the run. `sign` is the origin's Ed25519 key
/// (its node identity); `scope` the room the stream belongs to.
public struct StreamSealer {
    public private(set) var stats = SealerStats()
    private let sign: ([UInt8]) -> [UInt8]
    private let scope: [UInt8]
    /// Audio published since the last seal (audio-only): the first one's sequence number and each one's hash.
    private var audio: (first: UInt16, hashes: [UInt64])?
    /// Audio packets since the last video frame (saturating at `audioOnlyAfter`).
    private var audioSinceVideo = MediaSeal.audioOnlyAfter
    /// The run an audio-only stream's seals name (1...`maxAudioHashes`; 1: each packet alone).
    private let audioOnlyRun: Int

    /// - Parameter audioOnlyRun: what one seal of an audio-only stream names
    ///   (the default `maxAudioHashes`, as every node seals; others for `LVBBench seal`).
    public init(scope: [UInt8], sign: @escaping ([UInt8]) -> [UInt8], audioOnlyRun: Int = MediaSeal.maxAudioHashes) {
        self.scope = scope
        self.sign = sign
        self.audioOnlyRun = max(1, min(audioOnlyRun, MediaSeal.maxAudioHashes))
    }

    /// Whether the stream counts as audio-only now (its audio sealed in runs).
    public var audioOnly: Bool { audioSinceVideo >= MediaSeal.audioOnlyAfter }

    /// Seals one video frame (its packets in order, numbered as sent): the first packet carries the seal.
    public mutating func seal(frame packets: inout [RTPPacket]) {
        guard !packets.isEmpty, packets.count <= Int(UInt16.max) else { return }
        let digest = MediaSeal.frameDigest(packets.map(MediaSeal.packetDigest))
        let run = audio ?? (0, [])
        audio = nil
        audioSinceVideo = 0
        var seal = MediaSeal(kind: .video, framePackets: UInt16(packets.count), audioFirstSeq: run.first, audioHashes: run.hashes)
        seal.signature = sign(seal.message(scope: scope, frameDigest: digest))
        attach(seal, to: &packets[0])
        stats.videoSeals += 1
    }

    /// Seals one audio packet (numbered as sent): alone while the stream has
    /// video; else notes it, and seals the run when it is the
    /// `maxAudioHashes`-th since the last seal.
    public mutating func seal(audio packet: inout RTPPacket) {
        let hash = MediaSeal.audioHash(MediaSeal.packetDigest(packet))
        if !audioOnly || (audioOnlyRun == 1 && audio == nil) {
            if !audioOnly { audioSinceVideo += 1 }
            var seal = MediaSeal(kind: .audio, audioFirstSeq: packet.sequenceNumber)
            seal.signature = sign(seal.message(scope: scope, frameDigest: nil, audio: (packet.sequenceNumber, [hash])))
            attach(seal, to: &packet)
            stats.audioSeals += 1
            return
        }
        if var run = audio, run.first &+ UInt16(run.hashes.count) == packet.sequenceNumber {
            run.hashes.append(hash)
            audio = run
        } else {
            // The first, or a break in numbering (none with one splicer): a new run.
            audio = (packet.sequenceNumber, [hash])
        }
        guard let run = audio, run.hashes.count >= audioOnlyRun else { return }
        audio = nil
        var seal = MediaSeal(kind: .audio, audioFirstSeq: run.first, audioHashes: run.hashes)
        seal.signature = sign(seal.message(scope: scope, frameDigest: nil))
        attach(seal, to: &packet)
        stats.audioSeals += 1
    }

    private mutating func attach(_ seal: MediaSeal, to packet: inout RTPPacket) {
        let before = packet.serializedLength
        try? packet.setExtension(id: seal.extensionID, seal.encoded())  // invariant: ids 17/18, at most 102 bytes
        stats.bytesAdded += packet.serializedLength - before
    }
}
