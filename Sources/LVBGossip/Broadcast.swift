import LVBCore
import LVBCrypto

// Plumtree (Leitão, Pereira, Rodrigues 2007, "Epidemic Broadcast Trees"):
// events go eagerly along a spanning tree of the active view and lazily
// (IHAVE ids) on the other links; a duplicate prunes a link to lazy, a
// missing event grafts the announcing link back to eager.
extension GossipNode {
    /// Author and sequence of an encoded event, read without verifying it, so a
    /// duplicate costs no signature check (offsets of the v1 event layout:
    /// version 1, room 16, author 32, seq 8).
    static func peekID(_ bytes: ArraySlice<UInt8>) -> EventID? {
        let authorStart = bytes.startIndex + 1 + 16
        guard bytes.count >= 1 + 16 + 32 + 8,
              let author = try? NodeID(publicKey: Array(bytes[authorStart..<authorStart + 32])) else { return nil }
        var seq: UInt64 = 0
        for b in bytes[(authorStart + 32)..<(authorStart + 40)] { seq = seq << 8 | UInt64(b) }
        return EventID(author: author, seq: seq)
    }

    /// `repair` copies (graft and digest answers, history) do not shape the
    /// tree: a late repair arriving after the tree's copy must not prune a
    /// tree link, nor a repair arriving first make its sender a parent.
    func handleEvent(_ bytes: ArraySlice<UInt8>, from peer: NodeID, repair: Bool) {
        stats.eventCopiesReceived += 1
        guard let peeked = Self.peekID(bytes) else { invalid(from: peer, "event too short for its id"); return }
        if store.contains(peeked) {
            stats.duplicates += 1
            // A second copy along an eager link: make that link lazy.
            if !repair, eager.contains(peer), active.contains(peer) {
                eager.remove(peer)
                lazy.insert(peer)
                send(.prune, to: peer)
            }
            return
        }
        let event: RoomEvent
        do { event = try RoomEvent.parse(bytes, kinds: kinds) } catch {
            invalid(from: peer, "event \(peeked.author.short)#\(peeked.seq) refused: \(error)")
            return
        }
        guard event.id == peeked else { invalid(from: peer, "event id does not match its body"); return }
        switch accept?(event, peer) ?? .accept {
        case .reject:
            // The room logged why (RoomNode: "event … rejected").
            invalid(from: peer, nil)
            return
        case .duplicate:
            store.insert(event)
            missing[event.id] = nil
            stats.duplicates += 1
            return
        case .accept:
            break
        }
        stats.delivered += 1
        store.insert(event)
        lastEventAt = clock.now()
        missing[event.id] = nil
        if !repair, active.contains(peer) {
            eager.insert(peer)
            lazy.remove(peer)
        }
        push(event, except: peer)
    }

    /// Eager copies to the tree links, lazy announcements to the others.
    func push(_ event: RoomEvent, except source: NodeID?) {
        let message = GossipMessage.event(event.encoded[...]).bytes
        for n in active where n != source && eager.contains(n) {
            transport.sendGossip(message, to: n)
        }
        lazyQueue.append((event.id, source))
    }

    func handleIHave(_ ids: [EventID], from peer: NodeID) {
        let now = clock.now()
        for eventID in ids where !store.contains(eventID) {
            if var m = missing[eventID] {
                if !m.announcers.contains(peer) { m.announcers.append(peer) }
                missing[eventID] = m
            } else {
                missing[eventID] = MissingEvent(announcers: [peer], deadline: now + GossipConstants.graftTimeout)
            }
        }
    }

    func handleGraft(_ ids: [EventID], from peer: NodeID) {
        if active.contains(peer) {
            eager.insert(peer)
            lazy.remove(peer)
        }
        for eventID in ids {
            if let e = store.event(eventID) {
                transport.sendGossip(GossipMessage.repair(e.encoded[...]).bytes, to: peer)
                stats.repairsSent += 1
            }
        }
    }

    func handlePrune(from peer: NodeID) {
        guard active.contains(peer) else { return }
        eager.remove(peer)
        lazy.insert(peer)
    }

    /// Sends queued IHAVEs, one message per lazy peer per batch.
    func flushLazy() {
        guard !lazyQueue.isEmpty else { return }
        let queue = lazyQueue
        lazyQueue.removeAll(keepingCapacity: true)
        for n in active where !eager.contains(n) {
            let ids = queue.filter { $0.except != n }.map(\.0)
            var start = 0
            while start < ids.count {
                let chunk = Array(ids[start..<min(ids.count, start + GossipConstants.maxIdsPerMessage)])
                send(.ihave(chunk), to: n)
                stats.ihavesSent += 1
                start += chunk.count
            }
        }
    }

    /// Grafts events whose eager copy did not come in time, from their announcers in turn.
    func graftDue() {
        let now = clock.now()
        var byPeer: [NodeID: [EventID]] = [:]
        for (eventID, var m) in missing where now >= m.deadline {
            guard !m.announcers.isEmpty else { continue }
            let announcer = m.announcers.removeFirst()
            m.deadline = now + GossipConstants.graftTimeout
            missing[eventID] = m
            byPeer[announcer, default: []].append(eventID)
        }
        for (peer, ids) in byPeer {
            if active.contains(peer) {
                eager.insert(peer)
                lazy.remove(peer)
            }
            var start = 0
            while start < ids.count {
                let chunk = Array(ids[start..<min(ids.count, start + GossipConstants.maxIdsPerMessage)])
                send(.graft(chunk), to: peer)
                stats.grafts += 1
                start += chunk.count
            }
        }
        // Entries nobody can serve any more are left to the digests.
        if missing.count > 4096 { missing = missing.filter { !$0.value.announcers.isEmpty } }
    }

    func sendHistory(to peer: NodeID) {
        for e in history?() ?? [] {
            transport.sendGossip(GossipMessage.repair(e.encoded[...]).bytes, to: peer)
        }
    }

    /// Counts a malformed message or refused event from `peer` and, at debug
    /// level, says why (lvbnode(1) --log-level); nil when already logged.
    func invalid(from peer: NodeID, _ reason: @autoclosure () -> String?) {
        stats.invalid += 1
        if log.logLevel <= .debug, let why = reason() { log.debug("from \(peer.short): \(why)") }
        onInvalid?(peer)
    }
}
