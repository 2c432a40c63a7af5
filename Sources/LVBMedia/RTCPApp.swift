import LVBCore

/// Application-defined RTCP packet (RFC 3550 §6.7, PT 204): messages of this
/// project's own, told apart by `name` and `subtype`.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |V=2|P| subtype |   PT=APP=204  |             length            |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                           SSRC/CSRC                           |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                          name (ASCII)                         |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                   application-dependent data                ...
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
/// This node speaks two, both named "LVBK": `keyframesOnly(ssrc:)`, subtype
/// 0, no data — "this subscriber wants keyframes only" (a trickle
/// subscription, to preview a room); and `resume(ssrc:mediaSSRC:after:)`,
/// subtype 1 — "I last decoded this packet of that video" (a viewer
/// subscribing to a new parent, which then sends what it missed rather
/// than the GOP cache). Other APP packets are parsed and ignored.
public struct RTCPApp: Equatable, Sendable {
    /// 0...31 (the 5-bit count field), checked by `init`.
    public private(set) var subtype: UInt8
    /// The sender's SSRC.
    public var ssrc: UInt32
    /// Exactly 4 ASCII bytes, checked by `init` and when parsing.
    public private(set) var name: [UInt8]
    /// A multiple of 4 bytes (RFC 3550 §6.7: "a multiple of 32 bits long").
    public private(set) var data: [UInt8]

    public init(subtype: UInt8, ssrc: UInt32, name: [UInt8], data: [UInt8] = []) throws(MediaError) {
        guard subtype <= MediaConstants.RTCP.maxCount else { throw .invalidParameter("APP subtype \(subtype), at most 31") }
        guard name.count == 4, name.allSatisfy({ $0 < 0x80 }) else { throw .invalidParameter("APP name must be 4 ASCII bytes") }
        guard data.count % 4 == 0, data.count <= MediaConstants.RTCP.maxAppData else {
            throw .invalidParameter("APP data of \(data.count) bytes: a multiple of 4, at most \(MediaConstants.RTCP.maxAppData)")
        }
        self.init(checkedSubtype: subtype, ssrc: ssrc, name: name, data: data)
    }

    init(checkedSubtype subtype: UInt8, ssrc: UInt32, name: [UInt8], data: [UInt8]) {
        self.subtype = subtype
        self.ssrc = ssrc
        self.name = name
        self.data = data
    }

    /// "This subscriber wants keyframes only" (`MediaConstants.RTCP.appName`,
    /// subtype 0, no data), from the subscriber `ssrc`.
    public static func keyframesOnly(ssrc: UInt32) -> RTCPApp {
        RTCPApp(checkedSubtype: MediaConstants.RTCP.keyframesOnlySubtype, ssrc: ssrc,
                name: MediaConstants.RTCP.appName, data: [])
    }

    /// True for the keyframes-only request (its data, reserved, is not looked at).
    public var isKeyframesOnly: Bool {
        name == MediaConstants.RTCP.appName && subtype == MediaConstants.RTCP.keyframesOnlySubtype
    }

    /// "Resume video `mediaSSRC` after packet `after`, the last I decoded"
    /// (`MediaConstants.RTCP.resumeSubtype`), from the subscriber `ssrc`.
    public static func resume(ssrc: UInt32, mediaSSRC: UInt32, after: UInt16) -> RTCPApp {
        var w = ByteWriter()
        w.write(mediaSSRC)
        w.write(after)
        w.write(UInt16(0))
        return RTCPApp(checkedSubtype: MediaConstants.RTCP.resumeSubtype, ssrc: ssrc,
                       name: MediaConstants.RTCP.appName, data: w.bytes)
    }

    /// The video and packet a resume request names; nil for any other APP
    /// packet, a resume of another length included.
    public var resumePoint: (mediaSSRC: UInt32, after: UInt16)? {
        guard name == MediaConstants.RTCP.appName, subtype == MediaConstants.RTCP.resumeSubtype,
              data.count == MediaConstants.RTCP.resumeDataSize else { return nil }
        var r = ByteReader(data[...])
        guard let ssrc = try? r.readUInt32(), let after = try? r.readUInt16() else { return nil }
        return (ssrc, after)
    }
}

extension RTCPPacket {
    /// Whether `packets` are a receiver's feedback (a report, NACK, PLI or
    /// the keyframes-only request: what subscribes a peer to a stream),
    /// whether they ask for keyframes only, and where the receiver left off
    /// in video `videoSSRC` (a resume request).
    /// A goodbye anywhere in them means the peer leaves: not feedback.
    static func feedbackMode(of packets: [RTCPPacket], videoSSRC: UInt32?)
        -> (isFeedback: Bool, keyframesOnly: Bool, leaving: Bool, resumeAfter: UInt16?) {
        var isFeedback = false, keyframesOnly = false
        var resumeAfter: UInt16?
        for packet in packets {
            switch packet {
            case .receiverReport, .nack, .pli: isFeedback = true
            case .app(let app) where app.isKeyframesOnly: (isFeedback, keyframesOnly) = (true, true)
            case .app(let app):
                if let point = app.resumePoint, point.mediaSSRC == videoSSRC { resumeAfter = point.after }
            case .bye: return (false, false, true, nil)
            case .senderReport, .fir, .remb: break
            }
        }
        return (isFeedback, keyframesOnly, false, resumeAfter)
    }
}
