import LVBCore
import LVBCrypto

// HyParView (Leitão, Pereira, Rodrigues 2007): a small active view that
// carries broadcasts and a larger passive view of backups; joins spread by
// random walks (FORWARD_JOIN), failures are repaired from the passive view.
extension GossipNode {
    func handleJoin(from peer: NodeID) {
        guard mayNeighbor?(peer) ?? true else { return }
        // Seed the joiner's passive view so it can fill its active view itself
        // instead of leaning on us (the contact is usually the host).
        send(.shuffleReply(sample(GossipConstants.maxShuffleEntries)), to: peer)
        addActive(peer)
        if let address = transport.address(of: peer) {
            let record = PeerRecord(id: peer, address: address)
            for n in active where n != peer {
                send(.forwardJoin(ttl: GossipConstants.activeRandomWalk, peer: record), to: n)
            }
        }
        sendHistory(to: peer)
    }

    func handleForwardJoin(ttl: UInt8, peer: PeerRecord, from sender: NodeID) {
        guard peer.id != id else { return }
        if ttl == 0 || active.count <= 1 {
            requestNeighbor(peer, high: true)
            return
        }
        if ttl == GossipConstants.passiveRandomWalk { addPassive(peer) }
        let next = active.filter { $0 != sender && $0 != peer.id }
        if let n = pick(next) {
            send(.forwardJoin(ttl: ttl - 1, peer: peer), to: n)
        } else {
            requestNeighbor(peer, high: true)
        }
    }

    /// Asks `peer` into the active view; it enters when the peer accepts.
    func requestNeighbor(_ peer: PeerRecord, high: Bool) {
        guard peer.id != id, !active.contains(peer.id), pendingNeighbor[peer.id] == nil else { return }
        transport.connect(to: peer)
        pendingNeighbor[peer.id] = clock.now()
        send(.neighbor(high: high), to: peer.id)
    }

    /// A peer talks to us as a neighbour but is not in our active view (a
    /// DISCONNECT or reply was lost): tell it again, at most once a second.
    func rejectStrayNeighbor(_ peer: NodeID) {
        guard !active.contains(peer), pendingNeighbor[peer] == nil else { return }
        let now = clock.now()
        if let last = strayNotified[peer], now - last < .seconds(1) { return }
        if strayNotified.count > 4096 { strayNotified.removeAll() }
        strayNotified[peer] = now
        send(.disconnect, to: peer)
    }

    func handleNeighbor(high: Bool, from peer: NodeID) {
        let allowed = mayNeighbor?(peer) ?? true
        let accept = allowed && (high || active.count < GossipConstants.activeViewSize || active.contains(peer))
        if accept { addActive(peer) }
        send(.neighborReply(accepted: accept), to: peer)
    }

    func handleNeighborReply(accepted: Bool, from peer: NodeID) {
        pendingNeighbor[peer] = nil
        if accepted {
            promotionGap = .zero
            finishSwap(accepted: peer)
            addActive(peer)
        } else {
            backOffPromotions(now: clock.now())
            if swapping?.direct == peer { swapping = nil }
            removeActive(peer)
        }
    }

    func handleDisconnect(from peer: NodeID) {
        guard active.contains(peer) else { return }
        removeActive(peer)
        if let address = transport.address(of: peer) { addPassive(PeerRecord(id: peer, address: address)) }
        promoteIfNeeded(force: active.isEmpty)
    }

    func handleShuffle(_ peers: [PeerRecord], from sender: NodeID, reply: Bool) {
        if !reply {
            send(.shuffleReply(sample(GossipConstants.maxShuffleEntries)), to: sender)
        }
        for p in peers where p.id != id && !active.contains(p.id) { addPassive(p) }
    }

    /// Adds `peer` to the active view (and the eager set), evicting a random
    /// member into the passive view when full.
    func addActive(_ peer: NodeID) {
        guard peer != id, !active.contains(peer) else { return }
        if active.count >= GossipConstants.activeViewSize, let victim = pick(active.filter { $0 != contact?.id }) ?? pick(active) {
            send(.disconnect, to: victim)
            removeActive(victim)
            if let address = transport.address(of: victim) { addPassive(PeerRecord(id: victim, address: address)) }
        }
        active.append(peer)
        passive.removeAll { $0.id == peer }
        eager.insert(peer)
        lazy.remove(peer)
    }

    func removeActive(_ peer: NodeID) {
        if active.contains(peer) {
            promotionGap = .zero
            nextPromotion = nil
        }
        active.removeAll { $0 == peer }
        eager.remove(peer)
        lazy.remove(peer)
        pendingNeighbor[peer] = nil
        lastPull[peer] = nil
        for (eventID, var m) in missing where m.announcers.contains(peer) {
            m.announcers.removeAll { $0 == peer }
            missing[eventID] = m
        }
    }

    func addPassive(_ record: PeerRecord) {
        guard record.id != id, !active.contains(record.id) else { return }
        passive.removeAll { $0.id == record.id }
        if passive.count >= GossipConstants.passiveViewSize, !passive.isEmpty {
            passive.remove(at: Int(random.uint64() % UInt64(passive.count)))
        }
        passive.append(record)
    }

    /// A neighbour request was refused or went unanswered: low-priority ones wait longer.
    func backOffPromotions(now: Instant) {
        promotionGap = min(max(promotionGap * 2, GossipConstants.maintenanceInterval), GossipConstants.promotionBackoffMax)
        nextPromotion = now + promotionGap
    }

    /// Asks a random passive peer to become a neighbour while the active
    /// view is short (below its minimum at once; above it, backing off after
    /// refusals).
    func promoteIfNeeded(force: Bool) {
        let now = clock.now()
        let before = pendingNeighbor.count
        pendingNeighbor = pendingNeighbor.filter { now - $0.value < GossipConstants.neighborRequestTimeout }
        if pendingNeighbor.count < before { backOffPromotions(now: now) }  // unanswered: as good as refused
        guard active.count + pendingNeighbor.count < GossipConstants.activeViewSize else { return }
        let high = force || active.count < GossipConstants.minimumNeighbours
        if !high, let next = nextPromotion, now < next { return }
        let candidates = passive.filter { pendingNeighbor[$0.id] == nil }
        // Those reached without a relay first (issue 48), and of those the
        // ones we hold a session with (an ask that costs no handshake).
        let direct = candidates.filter { reachesDirectly?($0.id) != false }
        let held = direct.filter { transport.isConnected($0.id) }
        guard let record = pick(!held.isEmpty ? held : direct.isEmpty ? candidates : direct) else {
            // Nobody in reserve: fall back to the contact we joined through.
            if active.isEmpty, let contact { requestNeighbor(contact, high: true) }
            return
        }
        // High priority below two neighbours, not only at none: with one
        // neighbour a node hangs off the overlay by a single link, and low
        // requests to peers whose views are full can all be refused.
        requestNeighbor(record, high: high)
    }

    /// A neighbour whose session runs through a relay gives way, at most
    /// once per `relayedSwapInterval`, to a passive peer this node reaches
    /// directly (issue 48: a relayed link costs the relay its bytes). The
    /// active view stays as full as it was: the new one is asked first at
    /// high priority, the relayed one dropped once it accepts.
    func swapRelayedNeighbour() {
        guard let reaches = reachesDirectly, active.count >= GossipConstants.minimumNeighbours, pendingNeighbor.isEmpty else { return }
        let now = clock.now()
        if let last = lastSwap, now - last < GossipConstants.relayedSwapInterval { return }
        guard let relayed = active.first(where: { $0 != contact?.id && reaches($0) == false }),
              let record = pick(passive.filter { reaches($0.id) == true }) else { return }
        lastSwap = now
        swapping = (relayed, record.id)
        requestNeighbor(record, high: true)
    }

    /// The peer a swap asked accepted: the relayed neighbour goes, making
    /// room for it (rather than a random one).
    func finishSwap(accepted peer: NodeID) {
        guard let swap = swapping, swap.direct == peer else { return }
        swapping = nil
        guard active.contains(swap.relayed) else { return }
        send(.disconnect, to: swap.relayed)
        removeActive(swap.relayed)
        if let address = transport.address(of: swap.relayed) { addPassive(PeerRecord(id: swap.relayed, address: address)) }
    }

    func shuffle() {
        guard let target = pick(active.filter(transport.isConnected)) else { return }
        send(.shuffle(sample(GossipConstants.maxShuffleEntries)), to: target)
    }

    /// Up to `n` peers we know (active ones with their addresses, then passive).
    func sample(_ n: Int) -> [PeerRecord] {
        var out = [PeerRecord]()
        var rng = RandomAdapter(source: random)
        for a in active.shuffled(using: &rng) where out.count < n / 2 {
            if let address = transport.address(of: a) { out.append(PeerRecord(id: a, address: address)) }
        }
        for p in passive.shuffled(using: &rng) where out.count < n { out.append(p) }
        return out
    }
}

/// Lets a `RandomSource` drive the standard library's shuffles.
struct RandomAdapter: RandomNumberGenerator {
    let source: RandomSource
    mutating func next() -> UInt64 { source.uint64() }
}
