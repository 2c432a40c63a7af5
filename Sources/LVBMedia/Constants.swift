import LVBCore

/// The media layer's numbers (STYLE rule 2): values fixed by a specification
/// or by this project's protocol (man/lvbnode-protocol.7), then tuning values.
public enum MediaConstants {
    // MARK: Specification and protocol values

    /// Dynamic RTP payload types (RFC 3551 §6) this project fixes instead of
    /// negotiating: VP8 (RFC 7741) and Opus (RFC 7587). The SDP written by
    /// `--sdp` names the same numbers.
    public static let videoPayloadType: UInt8 = 96
    public static let audioPayloadType: UInt8 = 111
    /// RTP clock rates: 90 kHz for video (RFC 7741 §6.1), 48 kHz for Opus (RFC 7587 §4.1).
    public static let videoClockRate = 90_000
    public static let audioClockRate = 48_000
    /// Samples per 20 ms Opus frame at 48 kHz.
    public static let audioFrameSamples = 960
    /// One Opus frame's span: sound is captured, encoded and sent in these steps.
    public static let audioFrameDuration: Duration = .milliseconds(20)
    /// RTP header (12) + one-byte extension header (4) + capture time element
    /// (1 + 8, padded to 12): what every media packet spends before its payload.
    public static let rtpOverhead = 28
    /// Seconds from 1900 (NTP era 0) to 1970 (RFC 5905 §6).
    public static let ntpUnixOffset: UInt64 = 2_208_988_800

    /// RTP (RFC 3550 §5.1) and its one-byte header extensions (RFC 8285 §4.2).
    public enum RTP {
        static let version: UInt8 = 2
        static let fixedHeaderSize = 12
        static let maxCSRCs = 15
        static let oneByteProfile: UInt16 = 0xBEDE
        static let extensionIDs: ClosedRange<UInt8> = 1...14
        static let extensionLengths: ClosedRange<Int> = 1...16
        static let extensionStopID: UInt8 = 15
        /// RFC 8285 §4.3: "0x100" and four application bits (sent as zero).
        static let twoByteProfile: UInt16 = 0x1000
        static let maxTwoByteLength = 255
        /// Project-local extension: the sender's capture time of the media in
        /// this packet, 8 bytes, NTP 64-bit format (RFC 5905 §6: seconds since
        /// 1900 in the upper 32 bits, fraction of a second in the lower 32),
        /// big-endian — the layout of WebRTC's abs-capture-time without its
        /// clock offset. The id is fixed by this protocol rather than negotiated.
        public static let captureTimeExtensionID: UInt8 = 1
        static let captureTimeLength = 8
    }

    /// RTCP (RFC 3550 §6.4) and its feedback messages (RFC 4585 §6.1).
    public enum RTCP {
        /// The 5-bit count field's limit (report blocks).
        static let maxCount = 31
        static let typeSR: UInt8 = 200
        static let typeRR: UInt8 = 201
        static let typeRTPFB: UInt8 = 205
        static let typePSFB: UInt8 = 206
        static let typeAPP: UInt8 = 204
        static let typeBYE: UInt8 = 203
        static let formatGenericNACK: UInt8 = 1
        static let formatPLI: UInt8 = 1
        static let formatFIR: UInt8 = 4
        /// Application-layer feedback (RFC 4585 §6.4): REMB is one.
        static let formatAFB: UInt8 = 15
        static let reportBlockSize = 24
        /// APP data that still fits the 16-bit length field (words after the header, SSRC and name).
        static let maxAppData = 4 * (Int(UInt16.max) - 2)
        /// The name of this project's APP messages, told apart by subtype.
        static let appName: [UInt8] = Array("LVBK".utf8)
        /// This project's APP message "this subscriber wants keyframes only"
        /// (a trickle subscription, to preview a room): subtype 0, no data
        /// (any data is reserved and ignored). A feedback compound that
        /// carries it subscribes its sender to each keyframe of the video and
        /// nothing else; one without it subscribes to the whole stream.
        static let keyframesOnlySubtype: UInt8 = 0
        /// This project's APP message "resume the video after this packet"
        /// (a viewer moving to a new parent): subtype 1, data
        /// the video's SSRC (4 bytes), the sequence number of the last packet
        /// the viewer decoded (2 bytes) and 2 reserved bytes; other lengths
        /// are not this message.
        static let resumeSubtype: UInt8 = 1
        static let resumeDataSize = 8
    }

    // MARK: Tuning values

    /// A receiver takes a stream of a new SSRC from the same sender once the
    /// current one has been silent this long (a restarted publisher), or at
    /// once when told to expect it (`StreamReceiver.expectNewStream`).
    public static let streamSwitchSilence: Duration = .milliseconds(500)

    /// Packets the sender keeps to answer NACKs (about 10 s of 1 Mbit/s video).
    public static let sendHistoryPackets = 1024
    /// The GOP cache holds at most this many bytes; a longer GOP is not cached
    /// (joiners then wait for a keyframe).
    public static let gopCacheMaxBytes = 4 << 20
    /// A GOP cache filled packet by packet (a relay) holds at most this many packets.
    public static let gopCacheMaxPackets = 8192
    /// A viewer gets the GOP cache at most once in this long.
    public static let gopBurstInterval: Duration = .seconds(10)
    /// A new subscriber that says where it left off (a viewer whose parent
    /// died) gets the packets after that point from the history instead of
    /// the GOP cache, when they are at most this many (about 2 s of 2 Mbit/s
    /// video; a receiver takes a wider gap for a jump, not loss).
    public static let maxResumePackets = 512
    /// A viewer measures its round trip to the host this often.
    public static let rttProbeInterval: Duration = .seconds(5)
    /// The stream rate a relay sizes its children's repair budgets by (it
    /// does not know the host's ahead): a rich stream's; it only caps repairs.
    public static let relayAssumedKbps = 4000
    /// A viewer that sends no RTCP for this long stops receiving media.
    public static let subscriberTimeout: Duration = .seconds(5)
    /// A receiver sends feedback (an empty receiver report at least) this
    /// often, so its subscription never times out while it wants the stream.
    public static let resubscribeInterval: Duration = .seconds(1)
    /// Distinct NACKed sequence numbers a fan-out tracks per subscriber
    /// between two receiver reports (loss before repair).
    public static let maxTrackedNacks = 4096
    /// An audio-only stream is recorded once this much sound came without a picture.
    public static let audioOnlyRecordingWait: Duration = .seconds(2)
    /// `--egress`: at most one keyframe request upstream this often, however
    /// many of a media server's subscribers ask (Janus itself sends at most
    /// one PLI a second).
    public static let egressKeyframeInterval: Duration = .seconds(1)
    /// `--egress`: NACKed packets resent per video packet forwarded, and at
    /// most this many in hand: the server's feedback cannot make the egress
    /// send much more than the stream.
    public static let egressRetransmitShare = 0.25
    public static let egressRetransmitBurst = 64.0
    /// `--egress`: a sequence number this far from the newest starts a new
    /// source (RFC 3550 §A.1's MAX_DROPOUT).
    public static let egressMaxJump = 3000
    /// Sender reports go to each viewer this often.
    public static let senderReportInterval: Duration = .seconds(1)
    /// The encoder is asked for a keyframe at most this often, however many PLIs arrive.
    public static let keyframeRequestInterval: Duration = .milliseconds(250)
    /// Retransmissions to one viewer may use this many times the video target
    /// bitrate (bounds what a NACK can make the host send).
    public static let retransmitBudgetFactor = 2.0
    /// Rate control: back off above this loss, probe up below `probeLoss`.
    public static let backoffLoss = 0.10
    public static let probeLoss = 0.02
    /// Probing raises the target by this factor per second of low loss.
    public static let probeGainPerSecond = 1.08
    /// The lowest video target rate control goes to.
    public static let minVideoKbps = 100
    /// A relay remembers this many sequence numbers behind the newest of each
    /// SSRC to forward a packet once (a retransmission that fills a hole
    /// passes, a duplicate does not), and at most this many SSRCs.
    public static let relayDuplicateWindow = 2048
    public static let relayMaxSSRCs = 4
    /// Sequence numbers a relay's children NACKed that it lacks, waiting to
    /// go upstream; each goes up again at most every max(upstream RTT ×
    /// `ReceiverConstants.nackRetryRTTFactor`, `nackRetryFloor`), for at most
    /// `ReceiverConstants.nackMaxAge`.
    public static let relayMaxUpstreamNacks = 1000
    /// Sender reports a relay remembers having forwarded, to measure its
    /// children's round trips from their receiver reports.
    public static let relayRememberedSenderReports = 8
    // MARK: Tuning — media seals (lvbnode-protocol(7), MEDIA)

    /// Audio waits this long for the seal that names it (its own; in an
    /// audio-only stream the run's, at most 60 ms later), then is dropped unplayed.
    public static let sealAudioWait: Duration = .milliseconds(400)
    /// Signature checks of one feeder's media a second, and at once (an
    /// honest stream needs its frame rate plus 50 for audio; a new parent's
    /// GOP or resume burst at once): what is over waits for the next.
    public static let sealChecksPerSecond = 240
    public static let sealCheckBurst = 240
    /// A frame's packets wait this long for the rest and the seal (repairs included).
    public static let sealFrameWait: Duration = .seconds(3)
    /// Frames and audio packets held for their seal at most.
    static let sealPendingFrames = 64
    static let sealPendingAudio = 64
    /// Verified frames and audio packets remembered to tell copies from strays.
    static let sealRememberedFrames = 256
    static let sealRememberedAudio = 512
    /// A packet numbered after the newest verified one but timed more than
    /// this before it is a replay (10 s at 90 kHz and at 48 kHz).
    static let sealReplayTicks: Int32 = 900_000
    static let sealReplayAudioTicks: Int32 = 480_000

    /// Opus bitrate of the room's audio.
    public static let audioBitrate = 48_000

    // MARK: Tuning — room-list thumbnails

    /// A host's thumbnail: this wide (the height keeps the picture's aspect),
    /// at most this many bytes of JPEG (the rendezvous keeps one per room),
    /// tried at these qualities in turn until it fits.
    public static let thumbnailWidth = 160
    public static let maxThumbnailBytes = 8192
    public static let thumbnailQualities = [75, 55, 35, 20]
}

/// NTP 64-bit timestamps (RFC 5905 §6: seconds since 1900 in the upper 32
/// bits, fraction in the lower 32), as carried by the capture-time extension
/// and RTCP sender reports.
public enum NTPTime {
    public static func from(_ wall: WallTime) -> UInt64 {
        let seconds = wall.seconds &+ MediaConstants.ntpUnixOffset
        let fraction = (UInt64(wall.nanoseconds) << 32) / 1_000_000_000
        return seconds << 32 | fraction
    }

    /// Microseconds since the Unix epoch; 0 for none or a time before 1970.
    public static func unixMicros(_ ntp: UInt64?) -> UInt64 {
        guard let ntp, ntp >> 32 >= MediaConstants.ntpUnixOffset else { return 0 }
        let seconds = (ntp >> 32) - MediaConstants.ntpUnixOffset
        let fraction = ((ntp & 0xFFFF_FFFF) * 1_000_000) >> 32
        return seconds * 1_000_000 + fraction
    }

    /// `later − earlier` in milliseconds (negative when `later` is earlier).
    public static func milliseconds(from earlier: UInt64, to later: UInt64) -> Double {
        Double(Int64(bitPattern: later &- earlier)) * 1000 / 4_294_967_296
    }

    /// The middle 32 bits (RFC 3550 §6.4.1 LSR/DLSR units: 1/65536 s).
    public static func middle32(_ ntp: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: ntp >> 16) }
}

/// Values of the viewer-side receive pipeline ("specification": from an RFC or
/// fixed by this project's wire protocol; "tuning": local choices).
public enum ReceiverConstants {
    // MARK: Specification

    /// RFC 3550 §A.1: a forward sequence jump of this many or more is a restart, not loss.
    public static let maxDropout: UInt16 = 3000
    /// RFC 3550 §A.8: the jitter estimate moves 1/16 of the way to each new difference.
    public static let jitterGain = 1.0 / 16
    /// RFC 3550 §6.4.1: cumulative packets lost is a 24-bit signed field.
    public static let cumulativeLostRange: ClosedRange<Int64> = -0x80_0000...0x7F_FFFF
    /// RTP clocks (RFC 7741 §6.1, RFC 7587 §4.1) and this project's payload
    /// types, as `MediaConstants` fixes them for the sender.
    public static let videoClockRate = UInt32(MediaConstants.videoClockRate)
    public static let audioClockRate = UInt32(MediaConstants.audioClockRate)
    public static let videoPayloadType = MediaConstants.videoPayloadType
    public static let audioPayloadType = MediaConstants.audioPayloadType
    /// The sender's audio framing: one 20 ms Opus frame per packet (960 ticks at 48 kHz).
    public static let audioFrameTicks = Int64(MediaConstants.audioFrameSamples)

    // MARK: Tuning — receive statistics

    /// How far behind the highest sequence number a packet still counts as
    /// reordered rather than a jump. RFC 3550 §A.1's example uses 100; NACK
    /// retransmissions arrive up to a second late, so we accept more.
    public static let maxMisorder: UInt16 = 1000
    /// Recent sequence numbers remembered to recognise duplicates (> maxMisorder).
    public static let duplicateWindow = 2048

    // MARK: Tuning — NACK

    /// A forward gap wider than this is a jump (restart, long outage), not loss to repair.
    public static let nackMaxGap: Int64 = 512
    /// Most missing sequence numbers tracked; the oldest are given up beyond it.
    public static let nackMaxTracked = 1000
    /// Reorder allowance before the first request: a packet this many newer has
    /// arrived, or `nackReorderWait` has passed since the gap was seen.
    public static let nackReorderPackets: Int64 = 2
    public static let nackReorderWait: Duration = .milliseconds(5)
    /// Retries go out every max(RTT × factor, floor).
    public static let nackRetryRTTFactor = 1.5
    public static let nackRetryFloor: Duration = .milliseconds(20)
    /// Requests per missing packet before giving up.
    public static let nackMaxTries = 10
    /// Times a packet whose frame the seals refused is asked for again: once
    /// (an honest feeder that forwarded a lie has forgotten it and fetches
    /// the true copy; a liar answers with another lie, not asked for again).
    public static let sealReasks = 1
    /// A missing packet older than this is no longer worth asking for.
    public static let nackMaxAge: Duration = .seconds(1)
    /// Most sequence numbers in one feedback round (keeps a NACK under ~1 KB).
    public static let nackMaxPerFeedback = 200

    // MARK: Tuning — jitter buffer

    /// Window of the minimum transit (the baseline); long enough to ride out
    /// jitter, short enough to follow clock drift between sender and receiver.
    public static let baselineWindow: Duration = .seconds(10)
    /// Window of lateness samples the target delay is taken from.
    public static let latenessWindow: Duration = .seconds(3)
    /// Most lateness samples kept (bounds the work a flood of packets causes).
    public static let maxLatenessSamples = 600
    /// Percentile of recent lateness the target delay covers.
    public static let latenessPercentile = 0.95
    /// Upper bound of the target delay.
    public static let maxTargetDelay: Duration = .milliseconds(400)
    /// A video stream silent this long had an outage (a relay died, a link
    /// went down), not jitter: the frames that come after it, a new relay's
    /// GOP burst first, start a new baseline rather than count as late.
    public static let videoOutageSilence: Duration = .milliseconds(400)

    // MARK: Tuning — video

    /// Decode-order gaps are waited for max(target, the time of this many
    /// NACK rounds: the reorder wait, one RTT and as many retry intervals),
    /// at most `maxGapWait`. A NACK or its retransmission is lost with about
    /// twice the link's loss; one round left about one lost packet in five
    /// (at 10 % loss) to a skip and a keyframe wait, four leave 1 in 800.
    public static let gapRepairRounds = 4
    public static let maxGapWait: Duration = .milliseconds(500)
    /// When the first packet of a stream does not start a keyframe (the
    /// first packets of a GOP burst were lost), the receiver asks for this
    /// many packets before it, then twice as many each time the lowest one
    /// asked for comes back without a keyframe's start, up to
    /// `maxBackfillPackets` in all.
    public static let backfillStep = 4
    public static let maxBackfillPackets = 64
    /// Keyframe requests (PLI): no closer than max(RTT, this) for a new loss,
    /// repeated this often while no keyframe comes, and the first one this long
    /// after the first packet if the stream did not start with a keyframe.
    public static let pliMinInterval: Duration = .milliseconds(200)
    public static let pliRepeatInterval: Duration = .seconds(1)
    public static let firstKeyframeWait: Duration = .milliseconds(300)
    /// Complete frames held waiting to be decoded, and their bytes; frames
    /// partly received, and packets per frame (512 × 1167 B ≈ 600 KB, more
    /// than a 1080p keyframe needs). Together they bound what a misbehaving
    /// sender can make a viewer hold to about 16 + 19 MB.
    public static let maxQueuedFrames = 300
    public static let maxQueuedBytes = 16 << 20
    public static let maxPartialFrames = 32
    public static let maxPacketsPerFrame = 512

    // MARK: Tuning — audio

    /// Longest run of concealment before playout stops until packets resume (10 frames).
    public static let maxConcealmentRun = 10
    /// After a loss, for this long, a missing slot waits up to `fecWait` for
    /// the next packet, whose in-band FEC rebuilds it (NetEq does the same).
    public static let fecWaitAfterLoss: Duration = .seconds(10)
    public static let fecWait: Duration = .milliseconds(20)
    /// Audio this far behind its release time is dropped to get back to live.
    public static let maxPlayoutLag: Duration = .milliseconds(200)
    /// Most audio packets queued (10 s at 20 ms).
    public static let maxQueuedAudioPackets = 500

    // MARK: Tuning — preview (keyframes-only subscription)

    /// Frames a preview assembles at once, and their bytes together (a
    /// keyframe larger than the host's GOP cache could not be cached there
    /// either); packets per frame are bounded by `maxPacketsPerFrame`.
    public static let previewMaxPendingFrames = 4
    public static let previewMaxPendingBytes = MediaConstants.gopCacheMaxBytes
    /// A keyframe still missing packets this long after its last packet
    /// arrived is NACKed, then again every `previewNackRetry`, at most
    /// `previewNackRounds` times: a lost packet must not cost a whole GOP.
    public static let previewNackWait: Duration = .milliseconds(20)
    public static let previewNackRetry: Duration = .milliseconds(200)
    public static let previewNackRounds = 3
    /// Frames remembered as done (kept, delta, dropped) so that their late
    /// packets do not start them again.
    public static let previewFinishedFrames = 16

    // MARK: Tuning — reports

    /// Receiver reports go out this often once packets flow.
    public static let reportInterval: Duration = .milliseconds(500)
}
