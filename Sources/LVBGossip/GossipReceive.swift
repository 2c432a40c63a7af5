import LVBCore
import LVBCrypto

extension GossipNode {
    /// Feeds one gossip payload from an authenticated peer. Malformed input is
    /// counted and reported (`onInvalid`); nothing here throws or crashes.
    public func receive(_ payload: ArraySlice<UInt8>, from peer: NodeID) {
        let message: GossipMessage
        do { message = try GossipMessage.parse(payload) } catch {
            stats.malformed += 1
            invalid(from: peer, "malformed gossip message: \(error)")
            return
        }
        // Neighbour-only traffic from a non-neighbour: the views disagree.
        switch message {
        case .event, .ihave, .graft, .prune, .digest: rejectStrayNeighbor(peer)
        default: break
        }
        switch message {
        case .join: handleJoin(from: peer)
        case let .forwardJoin(ttl, record): handleForwardJoin(ttl: ttl, peer: record, from: peer)
        case let .neighbor(high): handleNeighbor(high: high, from: peer)
        case let .neighborReply(accepted): handleNeighborReply(accepted: accepted, from: peer)
        case .disconnect: handleDisconnect(from: peer)
        case let .shuffle(peers): handleShuffle(peers, from: peer, reply: false)
        case let .shuffleReply(peers): handleShuffle(peers, from: peer, reply: true)
        case let .event(bytes): handleEvent(bytes, from: peer, repair: false)
        case let .repair(bytes): handleEvent(bytes, from: peer, repair: true)
        case let .ihave(ids): handleIHave(ids, from: peer)
        case let .graft(ids): handleGraft(ids, from: peer)
        case .prune: handlePrune(from: peer)
        case let .digest(after, through, entries): handleDigest(after: after, through: through, entries: entries, from: peer)
        }
    }

    /// Runs due work; call every `GossipConstants.tickInterval`.
    public func tick() {
        let now = clock.now()
        if now - lastLazyFlush >= GossipConstants.lazyFlushInterval {
            lastLazyFlush = now
            flushLazy()
        }
        graftDue()
        let busy = lastEventAt.map { now - $0 < GossipConstants.digestBusyWindow } ?? false
        if now - lastDigest >= (busy ? GossipConstants.digestInterval : GossipConstants.idleDigestInterval) {
            lastDigest = now
            sendDigest()
        }
        // Cut off from the room (no neighbour): ask again sooner.
        let maintenance = active.isEmpty ? GossipConstants.neighborRequestTimeout : GossipConstants.maintenanceInterval
        if now - lastMaintenance >= maintenance {
            lastMaintenance = now
            promoteIfNeeded(force: active.isEmpty)
            swapRelayedNeighbour()
        }
        if now - lastShuffle >= GossipConstants.shuffleInterval {
            lastShuffle = now
            shuffle()
        }
    }
}
