import LVBCore

/// A relay's RTCP: its children's feedback (subscriptions, NACKs, PLIs,
/// receiver reports) and the parent's sender reports passed down to them.
extension MediaRelay {
    /// RTCP from a child the owner lets subscribe (an admitted member).
    public func receiveRTCP(_ bytes: ArraySlice<UInt8>, from child: Peer) {
        let packets: [RTCPPacket]
        do { packets = try RTCPPacket.parseCompound(bytes) } catch {
            stats.malformedRTCP += 1
            log.debug("relay: malformed RTCP: \(error)")
            return
        }
        receiveRTCP(packets, from: child)
    }

    /// The same, already parsed. A goodbye lets the child go; receiver
    /// feedback (RR, NACK, PLI) subscribes the child, to keyframes only when it carries the APP request; a new
    /// child gets the GOP cache at once. NACKs are answered from the history
    /// within the child's repair budget, and what the relay lacks is kept for
    /// upstream. A PLI goes upstream as at most one keyframe request per
    /// interval, and not at all when the GOP cache has just started the child.
    public func receiveRTCP(_ packets: [RTCPPacket], from child: Peer) {
        let now = clock.now()
        let (isFeedback, keyframesOnly, leaving, resumeAfter) = RTCPPacket.feedbackMode(of: packets, videoSSRC: videoSSRC)
        if leaving { return unsubscribe(child) }
        guard isFeedback, let startedFromCache = subscribe(child, keyframesOnly: keyframesOnly, resumeAfter: resumeAfter, now: now) else { return }
        for packet in packets {
            switch packet {
            case .nack(let nack) where nack.mediaSSRC == videoSSRC:
                answer(nack.lostSequenceNumbers, from: child, now: now)
            case .pli(let pli) where pli.mediaSSRC == videoSSRC:
                if keyframesOnly {
                    // A preview waits for the next keyframe, as at the origin.
                    stats.plisIgnored += 1
                } else {
                    stats.plisReceived += 1
                    if startedFromCache || !requestKeyframe(now: now) { stats.plisAggregated += 1 }
                }
            case .receiverReport(let rr):
                stats.receiverReports += 1
                guard !keyframesOnly else { break }
                for block in rr.reportBlocks where block.ssrc == videoSSRC {
                    noteReport(block, from: child, now: now)
                }
            default:
                break
            }
        }
    }

    /// Subscribes `child` in the mode its feedback asked for; nil when it is
    /// new and every slot is taken, else whether the GOP cache (or what it
    /// missed, when it asked to resume) started it now.
    /// A preview that becomes a full child starts its loss figures afresh.
    private func subscribe(_ child: Peer, keyframesOnly: Bool, resumeAfter: UInt16?, now: Instant) -> Bool? {
        if let existing = childState[child] {
            if fanOut.isKeyframesOnly(child), !keyframesOnly {
                childState[child] = Child(rtt: existing.rtt)
                _ = fanOut.takeRepairCounts(child)
            }
        } else {
            guard childState.count < maxChildren else {
                stats.childrenRefused += 1
                onRefused?(child)
                return nil
            }
            childState[child] = Child()
        }
        let bursts = fanOut.stats.startBursts
        // A full child with nothing to start from: ask upstream for a keyframe.
        if fanOut.subscribe(child, now: now, keyframesOnly: keyframesOnly, resumeAfter: resumeAfter) { requestKeyframe(now: now) }
        return fanOut.stats.startBursts > bursts
    }

    /// A child's generic NACK (RFC 4585 §6.2.1): resends what the history
    /// holds; keeps for upstream the holes the parent can still fill, each
    /// asked again only once a retry interval has passed.
    private func answer(_ sequences: [UInt16], from child: Peer, now: Instant) {
        let resent = fanOut.stats.retransmissions
        fanOut.nack(sequences, from: child, now: now)
        stats.nacksAnswered += fanOut.stats.retransmissions - resent
        let retry = max(upstreamRTT * ReceiverConstants.nackRetryRTTFactor, ReceiverConstants.nackRetryFloor)
        for seq in sequences where isMissing(seq) {
            if let asked = upstreamAsked[seq], now - asked < retry { continue }
            guard upstreamAsked[seq] != nil || upstreamAsked.count < MediaConstants.relayMaxUpstreamNacks,
                  upstreamPending.count < MediaConstants.relayMaxUpstreamNacks else { continue }
            upstreamAsked[seq] = now
            upstreamPending.insert(seq)
            stats.nacksPassedUp += 1
        }
    }

    /// A full child's report block about the relayed video: its loss (before
    /// repair, as the origin counts it) and, when it echoes a sender report
    /// this relay forwarded, its round trip (RFC 3550 §6.4.1: the time since
    /// forwarding less DLSR, all on the relay's own clock).
    private func noteReport(_ block: RTCPReportBlock, from child: Peer, now: Instant) {
        guard var c = childState[child] else { return }
        let repair = fanOut.takeRepairCounts(child)
        let beforeRepair = repair.sent > 0 ? min(1, Double(repair.nacked) / Double(repair.sent)) : 0
        c.lossFraction = max(Double(block.fractionLost) / 256, beforeRepair)
        if block.lastSenderReport != 0, let sent = forwardedReports.last(where: { $0.middle == block.lastSenderReport }) {
            let rtt = now - sent.at - .nanoseconds(Int64(block.delaySinceLastSenderReport) * 1_000_000_000 / 65536)
            if rtt >= .zero { c.rtt = rtt }
        }
        childState[child] = c
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
        let bytes = RTCPPacket.serializeCompound(reports)
        for child in fanOut.peers { fanOut.send(bytes, channel: .rtcp, to: child) }
    }
}
