import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// Placement in the media tree, from gossiped relay positions only.
@Suite struct TreePlacementTests {
    let ids = (1...40).map { identity(UInt8($0)).nodeID }
    var host: NodeID { ids[0] }
    let here = [PeerAddress(host: .v4(0x7F00_0001), port: 7400)]

    func position(_ parent: NodeID?, depth: Int, slots: Int = 4, children: Int = 0) -> RelayPosition {
        RelayPosition(parent: parent, depth: UInt8(depth), slots: UInt8(slots), children: UInt8(children), addresses: here)
    }

    /// host → 1, 2; 1 → 3, 4; 3 → 5. Host full; 1 has two free slots.
    var sample: [NodeID: RelayPosition] {
        [host: position(nil, depth: 0, slots: 2, children: 2),
         ids[1]: position(host, depth: 1, slots: 4, children: 2),
         ids[2]: position(host, depth: 1, slots: 4, children: 0),
         ids[3]: position(ids[1], depth: 2, slots: 4, children: 1),
         ids[4]: position(ids[1], depth: 2, slots: 0, children: 0),
         ids[5]: position(ids[3], depth: 3, slots: 4, children: 0)]
    }

    @Test func chainsReachTheHostOrDisqualify() {
        var tree = sample
        let p = TreePlacement(host: host, tree: tree)
        #expect(p.ancestors(of: ids[5]) == [ids[3], ids[1], host])
        #expect(p.depth(of: host) == 0 && p.depth(of: ids[5]) == 3)
        #expect(p.isBelow(ids[5], ids[1]) && !p.isBelow(ids[1], ids[5]) && !p.isBelow(ids[2], ids[1]))
        // A parent nobody has heard of, and a loop (7 ↔ 8), reach no host.
        tree[ids[6]] = position(ids[30], depth: 1)
        tree[ids[7]] = position(ids[8], depth: 5)
        tree[ids[8]] = position(ids[7], depth: 5)
        let q = TreePlacement(host: host, tree: tree)
        #expect(q.ancestors(of: ids[6]) == nil && q.ancestors(of: ids[7]) == nil && q.depth(of: ids[8]) == nil)
        #expect(!q.candidates(for: ids[20]).contains { [ids[6], ids[7], ids[8]].contains($0) })
    }

    @Test func candidatesAreShallowestWithFreeSlotsAndNeverBelowTheAsker() {
        let p = TreePlacement(host: host, tree: sample)
        // The host is full; 2 (depth 1, 4 free) before 1 (depth 1, 2 free), then depth 2 and 3; 4 takes no children.
        #expect(p.candidates(for: ids[20]) == [ids[2], ids[1], ids[3], ids[5]])
        // 1 moving: never to itself or below itself (3, 5).
        #expect(p.candidates(for: ids[1]) == [ids[2]])
        #expect(p.candidates(for: ids[20], excluding: [ids[2]]) == [ids[1], ids[3], ids[5]])
        // A silent node is left out with everything below it (fed by it).
        #expect(p.candidates(for: ids[20], silent: [ids[1]]) == [ids[2]])
        // Except below the host: one lost answer from it says nothing of its children.
        #expect(p.candidates(for: ids[20], silent: [host]) == [ids[2], ids[1], ids[3], ids[5]])
        // Before the host says anything, it is the one to ask.
        #expect(TreePlacement(host: host, tree: [:]).candidates(for: ids[20]) == [host])
        // One reached directly goes first among the equally deep (1 before 2), never before a shallower one (3 stays after both).
        #expect(p.candidates(for: ids[20], direct: { $0 == ids[1] || $0 == ids[3] }) == [ids[1], ids[2], ids[3], ids[5]])
        #expect(p.backup(for: ids[20], parent: nil, direct: { $0 == ids[1] }) == ids[1])
    }

    /// Issue 48: a parent the asker can reach without a relay goes first,
    /// however deep, and one it meets at once before one it meets by
    /// birthday punching: behind a hard NAT (a new port for every destination)
    /// every node but another hard one is reachable (open ones by the hard
    /// side's own flow, endpoint-independent ones by birthday punching),
    /// and a hard node is a leaf to the other hard ones (but over IPv6).
    @Test func reachableParentsComeFirstByNAT() {
        var tree = sample
        tree[ids[2]]?.nat = .hard
        tree[ids[1]]?.nat = .easy
        tree[ids[3]]?.nat = .easy
        tree[ids[5]]?.nat = .open
        let p = TreePlacement(host: host, tree: tree)
        // An easy asker reaches them all, the hard 2 by birthday punching
        // (its first second or so over a relay): those met at once first
        // (1, 3, 5 by depth), then 2, however shallow.
        #expect(p.candidates(for: ids[20], asker: (.easy, false)) == [ids[1], ids[3], ids[5], ids[2]])
        // A hard asker: the open 5 at once (its own flow), then 1 and 3 by
        // birthday punching (by depth), then the hard 2 it cannot meet.
        #expect(p.candidates(for: ids[20], asker: (.hard, false)) == [ids[5], ids[1], ids[3], ids[2]])
        // Unknown (not measured) meets as easy does; no asker: depth first as before.
        #expect(p.candidates(for: ids[20], asker: (.unknown, false)) == [ids[1], ids[3], ids[5], ids[2]])
        #expect(p.candidates(for: ids[20]) == [ids[2], ids[1], ids[3], ids[5]])
        // A hard node with a global IPv6 address is reachable over IPv6 by an asker that has one.
        tree[ids[2]]?.addresses = [PeerAddress(host: .v6([0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [2]), port: 7400)]
        let q = TreePlacement(host: host, tree: tree)
        #expect(q.candidates(for: ids[20], asker: (.hard, true)).first == ids[2])
        #expect(q.candidates(for: ids[20], asker: (.hard, false)).first == ids[5])
        #expect(NATKind.hard.meets(.open) && NATKind.hard.meets(.easy) && !NATKind.hard.meets(.hard) && NATKind.easy.meets(.unknown))
        #expect(NATKind.hard.meetsAtOnce(.open) && !NATKind.hard.meetsAtOnce(.easy) && !NATKind.easy.meetsAtOnce(.hard)
                && NATKind.easy.meetsAtOnce(.unknown) && NATKind.open.meetsAtOnce(.hard))
    }

    /// The NAT rides in the position's flags byte, and other flag bits are refused.
    @Test func thePositionCarriesItsNAT() throws {
        let author = Author(2)
        for nat in NATKind.allCases {
            let position = RelayPosition(parent: host, depth: 1, slots: 2, children: 1, addresses: here, nat: nat)
            let bytes = author.event(.relay(position)).encoded
            #expect(try RoomEvent.parse(bytes[...], kinds: RoomEvents.table).body.as(RelayPosition.self) == position)
        }
        // Flag bit 3 set: the signature no longer matters, the body is refused first or the event is.
        var bad = author.event(.relay(RelayPosition(parent: host, depth: 1, slots: 2, children: 1, addresses: here))).encoded
        guard let at = bad.indices.dropLast(32 + 3 + 2).first(where: { i in bad[i] == 1 && Array(bad[(i + 1)...].prefix(32)) == host.publicKey }) else {
            Issue.record("no flags byte before the parent")
            return
        }
        bad[at] |= 0x08
        #expect(throws: EventError.self) { try RoomEvent.parse(bad[...], kinds: RoomEvents.table) }
    }

    @Test func equalCandidatesAreOrderedPerAsker() {
        var tree: [NodeID: RelayPosition] = [host: position(nil, depth: 0, slots: 4, children: 4)]
        for i in 1...4 { tree[ids[i]] = position(host, depth: 1) }
        let p = TreePlacement(host: host, tree: tree)
        let firsts = Set((10..<40).compactMap { p.candidates(for: ids[$0]).first })
        #expect(firsts.count >= 3, "30 joiners all picked from \(firsts.count) of 4 equal relays")
    }

    /// The host's directory: the best free slots, shallowest first, with
    /// every node on their chains, each once, nearest the host first.
    @Test func theDirectoryOffersTheBestSpotsWithTheirChains() {
        let p = TreePlacement(host: host, tree: sample)
        // Free: 2 (depth 1, 4 free), 1 (depth 1, 2 free), 3 (depth 2, 3 free), 5 (depth 3, 4 free); 4 takes none.
        let all = p.directory(spots: 10)
        #expect(all.count == 4 && Set(all.prefix(2)) == [ids[1], ids[2]] && Array(all.suffix(2)) == [ids[3], ids[5]])
        // One spot: the shallowest with the most free slots.
        #expect(p.directory(spots: 1) == [ids[2]])
        // A deep spot brings its chain (not the host): with 1, 2 and 3 full, 5 comes with 3 and 1.
        var tree = sample
        tree[ids[1]] = position(host, depth: 1, slots: 2, children: 2)
        tree[ids[2]] = position(host, depth: 1, slots: 0)
        tree[ids[3]] = position(ids[1], depth: 2, slots: 1, children: 1)
        #expect(TreePlacement(host: host, tree: tree).directory(spots: 1) == [ids[1], ids[3], ids[5]])
        // A node whose chain reaches no host is never offered.
        tree[ids[6]] = position(ids[30], depth: 1)
        #expect(!TreePlacement(host: host, tree: tree).directory(spots: 10).contains(ids[6]))
    }

    @Test func theBackupIsInAnotherBranch() {
        let p = TreePlacement(host: host, tree: sample)
        // 5 hangs below 3 (branch 1): the backup is outside it, in branch 2.
        #expect(p.backup(for: ids[5], parent: ids[3]) == ids[2])
        // 2's only other option outside its branch: 1's (1, then 3).
        #expect(p.backup(for: ids[20], parent: ids[2]) == ids[1])
        #expect(p.backup(for: ids[20], parent: nil) == ids[2])
        #expect(p.backup(for: ids[1], parent: ids[2], excluding: []) == nil)
    }

    /// Nodes joining, leaving and moving at random, each attaching only to a
    /// candidate of the current view: every node always reaches the host and
    /// nobody ever hangs below itself.
    @Test func randomMovesNeverMakeALoop() {
        let random = SeededRandom(seed: 11)
        var tree: [NodeID: RelayPosition] = [host: position(nil, depth: 0, slots: 3)]
        var children: [NodeID: Int] = [:]
        func attach(_ id: NodeID) {
            let p = TreePlacement(host: host, tree: tree)
            let options = p.candidates(for: id)
            guard !options.isEmpty else { return }  // nowhere to move: it stays
            let parent = options[Int(random.uint64() % UInt64(min(3, options.count)))]
            if let old = tree[id]?.parent { children[old, default: 1] -= 1; refresh(old) }
            children[parent, default: 0] += 1
            refresh(parent)
            tree[id] = position(parent, depth: (p.depth(of: parent) ?? 0) + 1, slots: Int(random.uint64() % 4),
                                children: 0)
            refresh(id)
        }
        func refresh(_ id: NodeID) {
            guard var q = tree[id] else { return }
            q.children = UInt8(min(Int(q.slots), children[id] ?? 0))
            tree[id] = q
        }
        for step in 0..<3000 {
            let id = ids[1 + Int(random.uint64() % UInt64(ids.count - 1))]
            attach(id)
            let p = TreePlacement(host: host, tree: tree)
            for node in tree.keys {
                guard let chain = p.ancestors(of: node) else {
                    Issue.record("step \(step): \(node.short) does not reach the host")
                    return
                }
                #expect(!chain.contains(node))
            }
        }
    }
}
