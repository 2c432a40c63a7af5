import LVBCore

/// A relay's RTCP: its children's feedback (a `Downstream`, as at the
/// origin), what of it goes upstream, and the parent's sender reports passed
/// down to the children.
extension MediaRelay {
    /// RTCP from a child the owner lets subscribe (an admitted member): `Downstream.receiveRTCP`.
    public func receiveRTCP(_ bytes: ArraySlice<UInt8>, from child: Peer) { downstream.receiveRTCP(bytes, from: child) }
    public func receiveRTCP(_ packets: [RTCPPacket], from child: Peer) { downstream.receiveRTCP(packets, from: child) }

    /// After the history answered a child's generic NACK (RFC 4585 §6.2.1):
    /// keeps for upstream the holes the parent can still fill, each asked
    /// again only once a retry interval has passed.
    func passUp(_ sequences: [UInt16], now: Instant) {
        let retry = max(upstreamRTT * ReceiverConstants.nackRetryRTTFactor, ReceiverConstants.nackRetryFloor)
        for seq in sequences where isMissing(seq) {
            if let asked = upstreamAsked[seq], now - asked < retry { continue }
            guard upstreamAsked[seq] != nil || upstreamAsked.count < MediaConstants.relayMaxUpstreamNacks,
                  upstreamPending.count < MediaConstants.relayMaxUpstreamNacks else { continue }
            upstreamAsked[seq] = now
            upstreamPending.insert(seq)
            counts.nacksPassedUp += 1
        }
    }

    /// A child's round trip when its report block echoes a sender report
    /// this relay forwarded (RFC 3550 §6.4.1: the time since forwarding less
    /// DLSR, all on the relay's own clock).
    func roundTrip(echoing block: RTCPReportBlock, now: Instant) -> Duration? {
        guard let sent = forwardedReports.last(where: { $0.middle == block.lastSenderReport }) else { return nil }
        let rtt = now - sent.at - .nanoseconds(Int64(block.delaySinceLastSenderReport) * 1_000_000_000 / 65536)
        return rtt >= .zero ? rtt : nil
    }

    /// RTCP from the parent: the sender reports of the relayed stream go to
    /// every child unchanged (they carry the origin's clock mapping, and
    /// children echo them in their reports, which gives their round trip).
    public func receiveUpstreamRTCP(_ packets: [RTCPPacket]) {
        let reports = packets.filter {
            guard case .senderReport(let sr) = $0 else { return false }
            return sr.ssrc == videoSSRC || sr.ssrc == audioSSRC
        }
        guard !reports.isEmpty else { return }
        let now = clock.now()
        for case .senderReport(let sr) in reports {
            forwardedReports.append((NTPTime.middle32(sr.ntpTimestamp), now))
        }
        let excess = forwardedReports.count - MediaConstants.relayRememberedSenderReports
        if excess > 0 { forwardedReports.removeFirst(excess) }
        downstream.sendToAll(RTCPPacket.serializeCompound(reports))
    }
}
