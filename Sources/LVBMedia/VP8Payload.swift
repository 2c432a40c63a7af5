import LVBCore

/// The VP8 payload descriptor at the start of every VP8 RTP payload (RFC 7741 §4.2).
///
/// ```
///       0 1 2 3 4 5 6 7
///      +-+-+-+-+-+-+-+-+
///      |X|R|N|S|R| PID | (REQUIRED)
///      +-+-+-+-+-+-+-+-+
/// X:   |I|L|T|K| RSV   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// I:   |M| PictureID   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
///      |   PictureID   | (present when M = 1: 15-bit PictureID)
///      +-+-+-+-+-+-+-+-+
/// L:   |   TL0PICIDX   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// T/K: |TID|Y| KEYIDX  | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// ```
/// R and RSV bits are written as zero and ignored when read.
public struct VP8PayloadDescriptor: Equatable, Sendable {
    /// PictureID in its 7-bit (M = 0) or 15-bit (M = 1) form.
    public enum PictureID: Equatable, Sendable {
        case short(UInt8)
        case long(UInt16)
        public var value: UInt16 {
            switch self {
            case let .short(v): UInt16(v & 0x7F)
            case let .long(v): v & 0x7FFF
            }
        }
    }

    /// N: the frame is not used as a reference by others.
    public var nonReference: Bool
    /// S: this payload starts a VP8 partition.
    public var startOfPartition: Bool
    /// PID: partition index, 0...7 (masked to 3 bits when written).
    public var partitionIndex: UInt8
    public var pictureID: PictureID?
    public var tl0PicIndex: UInt8?
    /// TID (0...3) and Y (layer sync), present when T = 1.
    public var temporalLayer: (id: UInt8, layerSync: Bool)? {
        get { tid.map { ($0, layerSync) } }
        set { tid = newValue.map { $0.id & 0x03 }; layerSync = newValue?.layerSync ?? false }
    }
    /// KEYIDX (0...31), present when K = 1.
    public var keyIndex: UInt8?
    private var tid: UInt8?
    private var layerSync = false

    public init(nonReference: Bool = false, startOfPartition: Bool, partitionIndex: UInt8 = 0,
                pictureID: PictureID? = nil, tl0PicIndex: UInt8? = nil,
                temporalLayer: (id: UInt8, layerSync: Bool)? = nil, keyIndex: UInt8? = nil) {
        self.nonReference = nonReference
        self.startOfPartition = startOfPartition
        self.partitionIndex = partitionIndex
        self.pictureID = pictureID
        self.tl0PicIndex = tl0PicIndex
        self.keyIndex = keyIndex
        self.temporalLayer = temporalLayer
    }

    /// Splits an RTP payload into its descriptor and the VP8 data after it;
    /// a payload with no data after the descriptor is truncated.
    /// Whether the packet with this descriptor and `frameData` after it
    /// starts a keyframe (RFC 7741 §4.2, §4.3): S = 1, PID = 0, and the VP8
    /// frame tag's P bit (RFC 6386 §9.1) clear.
    public func startsKeyframe(_ frameData: ArraySlice<UInt8>) -> Bool {
        startOfPartition && partitionIndex == 0 && (frameData.first ?? 1) & 0x01 == 0
    }

    public static func parse(_ payload: ArraySlice<UInt8>) throws(MediaError) -> (VP8PayloadDescriptor, ArraySlice<UInt8>) {
        var r = ByteReader(payload)
        let b0 = try r.mediaRead8("VP8 payload descriptor")
        var d = VP8PayloadDescriptor(nonReference: b0 & 0x20 != 0, startOfPartition: b0 & 0x10 != 0,
                                     partitionIndex: b0 & 0x07)
        if b0 & 0x80 != 0 {
            let x = try r.mediaRead8("VP8 payload descriptor")
            if x & 0x80 != 0 {
                let m = try r.mediaRead8("VP8 payload descriptor")
                if m & 0x80 != 0 {
                    let low = try r.mediaRead8("VP8 payload descriptor")
                    d.pictureID = .long(UInt16(m & 0x7F) << 8 | UInt16(low))
                } else {
                    d.pictureID = .short(m)
                }
            }
            if x & 0x40 != 0 { d.tl0PicIndex = try r.mediaRead8("VP8 payload descriptor") }
            if x & 0x30 != 0 {
                let tk = try r.mediaRead8("VP8 payload descriptor")
                if x & 0x20 != 0 { d.temporalLayer = (tk >> 6, tk & 0x20 != 0) }
                if x & 0x10 != 0 { d.keyIndex = tk & 0x1F }
            }
        }
        let data = r.readRest()
        guard !data.isEmpty else { throw .truncated("VP8 payload data") }
        return (d, data)
    }

    /// The descriptor bytes; the X byte is written only when an optional field is present.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = [(nonReference ? 0x20 : 0) | (startOfPartition ? 0x10 : 0) | (partitionIndex & 0x07)]
        var x: UInt8 = 0
        if pictureID != nil { x |= 0x80 }
        if tl0PicIndex != nil { x |= 0x40 }
        if tid != nil { x |= 0x20 }
        if keyIndex != nil { x |= 0x10 }
        guard x != 0 else { return out }
        out[0] |= 0x80
        out.append(x)
        switch pictureID {
        case let .short(v)?: out.append(v & 0x7F)
        case let .long(v)?: out += [0x80 | UInt8((v >> 8) & 0x7F), UInt8(v & 0xFF)]
        case nil: break
        }
        if let tl0PicIndex { out.append(tl0PicIndex) }
        if tid != nil || keyIndex != nil {
            out.append((tid ?? 0) << 6 | (layerSync ? 0x20 : 0) | ((keyIndex ?? 0) & 0x1F))
        }
        return out
    }

    /// Whether `payload` starts a frame (S = 1, PID = 0); false when its descriptor is malformed.
    public static func startsFrame(_ payload: ArraySlice<UInt8>) -> Bool {
        guard let (d, _) = try? parse(payload) else { return false }
        return d.startOfPartition && d.partitionIndex == 0
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.nonReference == b.nonReference && a.startOfPartition == b.startOfPartition
            && a.partitionIndex == b.partitionIndex && a.pictureID == b.pictureID
            && a.tl0PicIndex == b.tl0PicIndex && a.tid == b.tid && a.layerSync == b.layerSync
            && a.keyIndex == b.keyIndex
    }
}

/// Splits encoded VP8 frames into RTP payloads of at most `maxPayloadSize`
/// bytes (RFC 7741 §4.2): each carries a 15-bit PictureID that increases by one
/// per frame; the first has S = 1, all have PID = 0 (the frame is sent as one partition).
public struct VP8Packetizer: Sendable {
    public let maxPayloadSize: Int
    /// Bytes the first packet of each frame leaves free (for its seal,
    /// `MediaSeal.firstPacketReserve`), but never more than half its room.
    public let firstPacketReserve: Int
    /// PictureID of the next frame (15 bits, wraps).
    public private(set) var nextPictureID: UInt16

    static let descriptorSize = 4  // first byte, X byte, two PictureID bytes

    public init(maxPayloadSize: Int, firstPacketReserve: Int = 0, firstPictureID: UInt16 = 0) throws(MediaError) {
        guard maxPayloadSize > Self.descriptorSize else {
            throw .invalidParameter("max VP8 payload size \(maxPayloadSize) leaves no room after the 4-byte descriptor")
        }
        self.maxPayloadSize = maxPayloadSize
        self.firstPacketReserve = max(0, firstPacketReserve)
        self.nextPictureID = firstPictureID & 0x7FFF
    }

    /// One frame as the RTP packets of a stream: consecutive sequence
    /// numbers from `sequence` (advanced past them), one timestamp, the
    /// marker bit on the last, the capture time on each.
    public mutating func rtpPackets(_ frame: [UInt8], timestamp: UInt32, ssrc: UInt32, sequence: inout UInt16,
                                    captureTime: UInt64) throws(MediaError) -> [RTPPacket] {
        let payloads = try packetize(frame)
        var packets: [RTPPacket] = []
        packets.reserveCapacity(payloads.count)
        for (i, payload) in payloads.enumerated() {
            var p = try RTPPacket(marker: i == payloads.count - 1, payloadType: MediaConstants.videoPayloadType,
                                  sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc, payload: payload[...])
            p.setCaptureTime(captureTime)
            sequence &+= 1
            packets.append(p)
        }
        return packets
    }

    /// The payloads of one frame, in order. The caller gives them consecutive
    /// sequence numbers, one RTP timestamp, and the marker bit on the last.
    public mutating func packetize(_ frame: [UInt8]) throws(MediaError) -> [[UInt8]] {
        guard !frame.isEmpty else { throw .invalidParameter("empty VP8 frame") }
        let pictureID = nextPictureID
        nextPictureID = (nextPictureID &+ 1) & 0x7FFF
        let chunk = maxPayloadSize - Self.descriptorSize
        // (Tiny payloads, in tests, keep half their room at least.)
        let firstChunk = max((chunk + 1) / 2, chunk - firstPacketReserve)
        var payloads: [[UInt8]] = []
        payloads.reserveCapacity((frame.count + firstPacketReserve) / chunk + 1)
        var start = 0
        while start < frame.count {
            let end = min(start + (start == 0 ? firstChunk : chunk), frame.count)
            let d = VP8PayloadDescriptor(startOfPartition: start == 0, pictureID: .long(pictureID))
            payloads.append(d.serialized() + frame[start..<end])
            start = end
        }
        return payloads
    }
}

/// A VP8 frame rebuilt from its RTP packets.
public struct VP8AssembledFrame: Equatable, Sendable {
    public var timestamp: UInt32
    public var data: [UInt8]
    /// RFC 7741 §4.3: the P bit (bit 0 of the frame's first byte) is 0 on keyframes.
    public var isKeyframe: Bool
    public var pictureID: UInt16?
}

/// A frame the assembler gave up on because packets were missing.
public struct VP8IncompleteFrame: Equatable, Sendable {
    public var timestamp: UInt32
    /// Sequence numbers missing between the first and last packets that arrived
    /// (packets before or after those are unknown: see `hasStart`, `hasEnd`).
    public var missing: [UInt16]
    /// The packet with S = 1, PID = 0 arrived.
    public var hasStart: Bool
    /// The packet with the marker bit arrived.
    public var hasEnd: Bool
}

/// What the assembler reports as packets arrive.
public enum VP8AssemblerOutput: Equatable, Sendable {
    case frame(VP8AssembledFrame)
    case incomplete(VP8IncompleteFrame)
}

/// Reassembles VP8 frames from RTP packets in any order (RFC 7741 §4.2, §4.5):
/// a frame is the packets of one RTP timestamp from the S = 1, PID = 0 packet
/// to the marker packet, with no sequence number missing between them. Once a
/// frame is delivered, older frames still waiting are reported incomplete
/// (the decoder has moved past them) and packets older than it are ignored.
public struct VP8FrameAssembler: Sendable {
    private struct Pending: Sendable {
        var packets: [UInt16: (VP8PayloadDescriptor, ArraySlice<UInt8>)] = [:]
        var start: UInt16?
        var end: UInt16?
        var lowest: UInt16
        var highest: UInt16
    }

    // Tuning values: bounds on memory a sender can make us hold.
    public let maxPendingFrames: Int
    public let maxPacketsPerFrame: Int
    private var pending: [UInt32: Pending] = [:]
    private var lastDelivered: UInt16?

    public init(maxPendingFrames: Int = 16, maxPacketsPerFrame: Int = 1024) {
        self.maxPendingFrames = max(1, maxPendingFrames)
        self.maxPacketsPerFrame = max(1, maxPacketsPerFrame)
    }


    /// Adds one packet; fails (and keeps no state) when its VP8 descriptor is bad.
    public mutating func insert(_ packet: RTPPacket) throws(MediaError) -> [VP8AssemblerOutput] {
        let (descriptor, data) = try VP8PayloadDescriptor.parse(packet.payload)
        let seq = packet.sequenceNumber
        if let lastDelivered, !sequencePrecedes(lastDelivered, seq) { return [] }
        var out: [VP8AssemblerOutput] = []
        var frame = pending[packet.timestamp] ?? Pending(lowest: seq, highest: seq)
        if pending[packet.timestamp] == nil, pending.count >= maxPendingFrames, let oldest = oldestTimestamp() {
            out.append(giveUp(oldest))
        }
        guard frame.packets[seq] == nil else { return out }
        frame.packets[seq] = (descriptor, data)
        if sequencePrecedes(seq, frame.lowest) { frame.lowest = seq }
        if sequencePrecedes(frame.highest, seq) { frame.highest = seq }
        if descriptor.startOfPartition && descriptor.partitionIndex == 0 { frame.start = seq }
        if packet.marker { frame.end = seq }
        pending[packet.timestamp] = frame

        if frame.packets.count > maxPacketsPerFrame {
            return out + [giveUp(packet.timestamp)]
        }
        guard let start = frame.start, let end = frame.end else { return out }
        let span = Int(end &- start) + 1
        guard span <= maxPacketsPerFrame else { return out + [giveUp(packet.timestamp)] }
        var bytes: [UInt8] = []
        for i in 0..<span {
            guard let (_, chunk) = frame.packets[start &+ UInt16(i)] else { return out }
            bytes += chunk
        }
        pending[packet.timestamp] = nil
        for (ts, other) in pending where sequencePrecedes(other.lowest, start) { out.append(giveUp(ts)) }
        lastDelivered = end
        let first = frame.packets[start]?.0.pictureID?.value
        out.append(.frame(VP8AssembledFrame(timestamp: packet.timestamp, data: bytes,
                                            isKeyframe: (bytes.first ?? 1) & 0x01 == 0, pictureID: first)))
        return out
    }

    /// Reports every frame still waiting as incomplete and forgets it.
    public mutating func flush() -> [VP8AssemblerOutput] {
        var out: [VP8AssemblerOutput] = []
        while let ts = oldestTimestamp() { out.append(giveUp(ts)) }
        return out
    }

    private func oldestTimestamp() -> UInt32? {
        pending.min { sequencePrecedes($0.value.lowest, $1.value.lowest) }?.key
    }

    private mutating func giveUp(_ timestamp: UInt32) -> VP8AssemblerOutput {
        let frame = pending.removeValue(forKey: timestamp)
        var missing: [UInt16] = []
        if let frame {
            var s = frame.lowest
            while s != frame.highest {
                if frame.packets[s] == nil { missing.append(s) }
                s &+= 1
            }
        }
        return .incomplete(VP8IncompleteFrame(timestamp: timestamp, missing: missing,
                                              hasStart: frame?.start != nil, hasEnd: frame?.end != nil))
    }
}
