import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import TestAssertions
import LVBTransport
import Testing

/// A deterministic identity: the seed is 32 copies of `n`.
func identity(_ n: UInt8) -> Identity {
    (try? Identity(seed: [UInt8](repeating: n, count: 32)))!  // invariant: 32-byte seeds always derive a key pair
}

let testRoom = (try? RoomID(bytes: Array(1...16)))!  // invariant: 16 bytes
let otherRoom = (try? RoomID(bytes: Array(101...116)))!  // invariant: 16 bytes

/// An author that numbers its events, signing them for one room.
final class Author {
    let identity: Identity
    let room: RoomID
    var seq: UInt64 = 0
    var id: NodeID { identity.nodeID }

    init(_ n: UInt8, room: RoomID = testRoom) {
        identity = LVBRoomTests.identity(n)
        self.room = room
    }

    /// The next event; `timestamp` defaults to 1,700,000,000,000 ms plus the sequence number.
    func event(_ body: EventBody, timestamp: UInt64? = nil) -> RoomEvent {
        seq += 1
        return (try? RoomEvent.make(room: room, author: identity, seq: seq,
                                    timestamp: timestamp ?? 1_700_000_000_000 + seq, body: body))!  // invariant: tests pass valid bodies
    }

    func chat(_ text: String = "hello", timestamp: UInt64? = nil) -> RoomEvent { event(.chat(text: text), timestamp: timestamp) }
    func join(instance: UInt64 = 1, role: NodeRole = .viewer) -> RoomEvent { event(.join(instance: instance, role: role)) }
    func like(_ total: UInt64) -> RoomEvent { event(.like(total: total)) }
}

extension RoomState.Verdict {
    var changes: [RoomChange]? {
        if case let .accepted(c) = self { return c }
        return nil
    }
}

/// A host and `viewers` open-room joiners (by ticket) on a virtual network losing `loss` of packets.
func simRoom(viewers: Int, seed: UInt64, loss: Double) -> (VirtualNetwork, RoomSim, [RoomSim]) {
    let net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(loss: loss, delay: .milliseconds(10), jitter: .milliseconds(5)))
    let nodes = net.makeNodes(viewers + 1, seed: seed)
    let random = SeededRandom(seed: seed ^ 0xABC)
    let roomID = RoomID.random(random)
    let policy = AdmissionPolicy(room: roomID, host: nodes[0].core.identity, mode: .open, clock: net.clock)
    let host = RoomSim(nodes[0], RoomNode(hosting: policy, core: nodes[0].core, clock: net.clock, random: random,
                                          info: RoomInfo(title: "sim")), network: net)
    let joiners = nodes.dropFirst().map { n in
        let r = RoomNode(joining: roomID, host: nodes[0].id, proof: .none, core: n.core, clock: net.clock, random: random)
        n.core.connect(to: nodes[0].address, expecting: nodes[0].id)
        return RoomSim(n, r, network: net)
    }
    return (net, host, joiners)
}
