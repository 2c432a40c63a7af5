#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FuzzWorld
import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRendezvous
import LVBRoom
import LVBTestSupport
import LVBTransport

// Writes the seed corpora: a handful of small valid inputs per fuzz target,
// captured from real sessions on the virtual network (deterministic seeds, so
// rerunning gives the same files). Usage:
//
//   swift run --package-path Fuzz MakeCorpus [corpus-dir]   (default Fuzz/Corpus)

@main enum MakeCorpus {
    static func main() throws {
        // Fuzz/Sources/MakeCorpus/MakeCorpus.swift → Fuzz/Corpus
        let defaultDir = String(#filePath.split(separator: "/", omittingEmptySubsequences: false)
            .dropLast(3).joined(separator: "/")) + "/Corpus"
        let dir = CommandLine.arguments.dropFirst().first ?? defaultDir
        let corpora = [
            "FuzzPacket": try packetSeeds(),
            "FuzzTicket": try ticketSeeds(),
            "FuzzReceive": try receiveSeeds(),
            "FuzzEvent": try eventSeeds(),
            "FuzzGossip": try gossipSeeds(),
            "FuzzMedia": try mediaSeeds(),
            "FuzzMediaReceive": try mediaReceiveSeeds(),
            "FuzzSeal": try sealSeeds(),
            "FuzzRoom": try roomSeeds(),
            "FuzzRendezvous": try rendezvousSeeds(),
        ]
        for (target, seeds) in corpora {
            let targetDir = dir + "/" + target
            try makeDirectory(dir)
            try makeDirectory(targetDir)
            for (name, bytes) in seeds.sorted(by: { $0.key < $1.key }) {
                try write(bytes, to: targetDir + "/" + name)
            }
            print("\(target): \(seeds.count) seeds, \(seeds.values.reduce(0) { $0 + $1.count }) bytes → \(targetDir)")
        }
    }

    /// Every datagram delivered on `net`, in order.
    final class Capture {
        var datagrams: [[UInt8]] = []
        init(_ nodes: [SimulatedNode]) {
            for node in nodes {
                let original = node.endpoint.onReceive
                node.endpoint.onReceive = { [unowned self] d, from in
                    datagrams.append(d)
                    original?(d, from)
                }
            }
        }
        func first(_ type: PacketType) -> [UInt8]? { datagrams.first { $0.first == type.rawValue } }
    }

    struct SetupFailed: Error, CustomStringConvertible {
        let description: String
    }

    static func makeDirectory(_ path: String) throws {
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
            throw SetupFailed(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        guard let file = fopen(path, "wb") else {
            throw SetupFailed(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        guard fwrite(bytes, 1, bytes.count, file) == bytes.count else {
            throw SetupFailed(description: "short write to \(path)")
        }
    }

    /// Genuine datagrams of every packet type, plus the inner formats.
    static func packetSeeds() throws -> [String: [UInt8]] {
        var seeds: [String: [UInt8]] = [:]

        // SimulatedNode's callbacks hold it unowned: keep the nodes alive while the network runs.
        let ikNet = VirtualNetwork(seed: 101)
        let ik = ikNet.makeNodes(2, seed: 102)
        let ikCapture = Capture(ik)
        try withExtendedLifetime((ik, ikCapture)) {
            ik[1].core.connect(to: ik[0].address, expecting: ik[0].id)
            ikNet.run(for: .milliseconds(100))
            try ik[1].core.send(Array("chat: hi".utf8), channel: .gossip, to: ik[0].id)
            ikNet.run(for: .milliseconds(100))
        }
        seeds["ik-initiation"] = ikCapture.first(.ikInitiation)
        seeds["ik-response"] = ikCapture.first(.ikResponse)
        let transports = ikCapture.datagrams.filter { $0.first == PacketType.transport.rawValue }
        seeds["transport-keepalive"] = transports.first { $0.count == MessageSize.transportOverhead }
        seeds["transport-data"] = transports.last

        let xxNet = VirtualNetwork(seed: 103)
        let xx = xxNet.makeNodes(2, seed: 104)
        let xxCapture = Capture(xx)
        withExtendedLifetime((xx, xxCapture)) {
            xx[1].core.connect(to: xx[0].address, expecting: nil)
            xxNet.run(for: .milliseconds(100))
        }
        seeds["xx-initiation"] = xxCapture.first(.xxInitiation)
        seeds["xx-response"] = xxCapture.first(.xxResponse)
        seeds["xx-final"] = xxCapture.first(.xxFinal)

        var loaded = TransportConfig()
        loaded.underLoadThreshold = 0   // every initiation gets a cookie reply first
        let cookieNet = VirtualNetwork(seed: 105)
        let cookie = cookieNet.makeNodes(2, seed: 106, config: loaded)
        let cookieCapture = Capture(cookie)
        withExtendedLifetime((cookie, cookieCapture)) {
            cookie[1].core.connect(to: cookie[0].address, expecting: cookie[0].id)
            cookieNet.run(for: .milliseconds(100))
        }
        seeds["cookie-reply"] = cookieCapture.first(.cookieReply)

        seeds["control-hello"] = ControlMessage.hello(Hello(agent: "lvbnode/0.1.0", role: .host)).bytes
        seeds["control-ping"] = ControlMessage.ping(0x0102_0304_0506_0708).bytes
        seeds["control-bye"] = ControlMessage.bye(1).bytes
        let v4 = PeerAddress.ipv4(192, 168, 1, 2, port: 7400), v6 = PeerAddress(host: .v6([0xFD] + [UInt8](repeating: 1, count: 15)), port: 9)
        seeds["introduce-request"] = IntroductionMessage.request(request: 7, peer: ik[0].id, addresses: [v4, v6]).encoded
        seeds["introduce-introduction"] = IntroductionMessage.introduction(request: 7, peer: ik[0].id, relay: true, addresses: [v4]).encoded
        seeds["introduce-relay"] = IntroductionMessage.relay(peer: ik[0].id, piece: RelayPiece(id: 3, index: 1, count: 2, bytes: [1, 2, 3])).encoded
        let id = ik[0].id
        seeds["payload-initiator"] = HandshakePayload.initiator(id: id, timestamp: TAI64N(ManualClock.defaultWallStart))
        seeds["payload-responder"] = id.publicKey

        for name in ["ik-initiation", "ik-response", "transport-keepalive", "transport-data",
                     "xx-initiation", "xx-response", "xx-final", "cookie-reply"] where seeds[name] == nil {
            throw SetupFailed(description: "no \(name) datagram was captured")
        }
        return seeds
    }

    /// RFC 5769's sample request and IPv4 response, the smallest Binding
    /// request, and a signed room announcement.
    static func rendezvousSeeds() throws -> [String: [UInt8]] {
        func hex(_ s: String) -> [UInt8] { (try? Hex.decode(s)) ?? [] }
        let host = try Identity(seed: [UInt8](repeating: 42, count: 32))
        var announcement = RoomAnnouncement(room: try RoomID(bytes: Array(1...16)), host: host.nodeID, seq: 1_700_000_000_000_000,
                                            time: 1_700_000_000_000, viewers: 3, likes: 9,
                                            info: RoomInfo(title: "seed room", startedAt: 1_700_000_000_000), hostNickname: "hana",
                                            addresses: [.ipv4(127, 0, 0, 1, port: 7400)])
        try announcement.sign(with: host)
        return [
            "announcement": announcement.encoded,
            "rfc5769-request": hex("000100582112a442b7e7a701bc34d686fa87dfae802200105354554e20746573742063"
                                   + "6c69656e74002400046e0001ff80290008932ff9b151263b36000600096576746a3a6836"
                                   + "7659202020000800149aeaa70cbfd8cb56781ef2b5b2d3f249c1b571a280280004e57a3bcf"),
            "rfc5769-ipv4-response": hex("0101003c2112a442b7e7a701bc34d686fa87dfae8022000b74657374207665"
                                         + "63746f7220002000080001a147e112a64300080014"
                                         + "2b91f599fd9e90c38c7489f92af9ba53f06be7d780280004c07d4c96"),
            "binding-request": hex("000100002112a442000102030405060708090a0b"),
            "introduce": RendezvousMessage.introduce(request: 7, room: try RoomID(bytes: Array(1...16)),
                                                     addresses: [.ipv4(10, 0, 0, 2, port: 40000)]).encoded,
            "introduction": RendezvousMessage.introduction(request: 7, peer: host.nodeID, relay: true,
                                                           addresses: [.ipv4(203, 0, 113, 5, port: 51000), .ipv4(10, 0, 0, 2, port: 7400)]).encoded,
            "observed": RendezvousMessage.observed(.ipv4(203, 0, 113, 5, port: 51000)).encoded,
            "relay": RendezvousMessage.relay(peer: host.nodeID, piece: RelayPiece(id: 1, index: 0, count: 2,
                                                                                  bytes: [4, 0, 0, 0] + [UInt8](repeating: 0x77, count: 40))).encoded,
            "thumbnail": RendezvousMessage.thumbnail(room: try RoomID(bytes: Array(1...16)), seq: 9,
                                                     piece: ThumbnailPiece(index: 0, count: 2, bytes: [0xFF, 0xD8] + [UInt8](repeating: 0x4A, count: 40))).encoded,
            "thumbnail-request": RendezvousMessage.thumbnailRequest(request: 7, room: try RoomID(bytes: Array(1...16)), have: 0).encoded,
            "thumbnail-none": RendezvousMessage.thumbnailAnswer(request: 7, room: try RoomID(bytes: Array(1...16)), seq: 0, piece: nil).encoded,
        ]
    }

    /// One message of each room-channel type.
    static func roomSeeds() throws -> [String: [UInt8]] {
        let room = [UInt8](1...16)
        let pass = [UInt8](repeating: 0x50, count: 120)
        let event = [UInt8](repeating: 0x45, count: 40)
        let request: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8], signature = [UInt8](repeating: 0x53, count: 64)
        let guest = try Identity(seed: [UInt8](repeating: 9, count: 32)).nodeID.publicKey
        // PK messages between two hosts, signed as they travel.
        let otherHost = try Identity(seed: [UInt8](repeating: 11, count: 32))
        let (from, to) = (try RoomID(bytes: room), try RoomID(bytes: Array(17...32)))
        func pk(_ body: PKMessage.Body) -> [UInt8] {
            PKMessage(from: from, to: to, pk: 0x0102_0304_0506_0708, sent: 1_800_000_000_000, body: body, sender: otherHost).encoded
        }
        return [
            "pk-request": pk(.request(minutes: 5, title: "Evening duel")),
            "pk-answer": pk(.answer(accepted: false, reason: "on a break")),
            "pk-end": pk(.end(.timeUp)),
            "pk-alive": pk(.alive(score: 1234)),
            "request-open": [1] + room + [0],
            "request-password": [1] + room + [1] + [UInt8](repeating: 0x70, count: 32),
            "response-admitted": [2] + room + [0] + pass,
            "response-denied": [2] + room + [1, 4],
            "leaving": [3] + pass + [2, 0, 40] + event + [0, 40] + event,
            "leave-ack": [4, 0, 0, 0, 0, 0, 0, 0, 42],
            "linkmic-request": [5] + room + request + [5] + Array("hello".utf8) + signature,
            "linkmic-answer": [6] + room + request + guest + [2, 7] + Array("not now".utf8) + signature,
            "linkmic-hangup": [7] + room + request + [3] + signature,
            "relay-full": [8],
            "relay-move-down": [9],
            "pass-wanted": [10] + room,
            "relay-redirect": [11, 2] + guest + guest,
            "count-report": [12, 3, 1, 0, 0, 0, 42],
            "roster": [13, 2, 0, 40] + event + [0, 40] + event,
            "roster-ack": [14, 0, 0, 0, 0, 0, 0, 0, 42],
            "positions": [15, 2, 0, 40] + event + [0, 40] + event,
            "quiz-answer": [21] + room + request + guest + [2] + [0, 0, 1, 0x8C, 0x2C, 0x0F, 0x6A, 0x00] + signature,
            "quiz-ack": [22] + room + request + [2, 1],
            "unknown-type": [200, 1, 2, 3],
        ]
    }

    static func ticketSeeds() throws -> [String: [UInt8]] {
        let random = SeededRandom(seed: 107)
        let host = try Identity(seed: random.bytes(32)).nodeID
        let full = JoinTicket(host: host, addresses: [
            .ipv4(192, 168, 1, 20, port: 7400),
            try PeerAddress(parsing: "[2001:db8::1]:7400"),
        ], fields: [1: Array("room-42".utf8), 9: [0xFF]])
        let small = JoinTicket(host: host, addresses: [.ipv4(127, 0, 0, 1, port: 7400)])
        return [
            "ticket-full": Array(full.text.utf8),
            "ticket-small": Array(small.text.utf8),
            "ticket-upper-spaced": Array("  \(small.text.uppercased())\n".utf8),
            "node-id": Array(host.text.utf8),
            "address-v4": Array("10.0.0.1:7400".utf8),
            "address-v6": Array("[2001:db8::1]:443".utf8),
            "address-localhost": Array("localhost:7400".utf8),
            "base32": Array("mzxw6ytboi".utf8),
            "hex": Array("00017f80abff".utf8),
        ]
    }

    /// One signed event of every kind (whole-event inputs), and kind ‖ body
    /// inputs that FuzzEvent frames and signs itself.
    static func eventSeeds() throws -> [String: [UInt8]] {
        let random = SeededRandom(seed: 110)
        let author = try Identity(seed: random.bytes(32))
        let target = try Identity(seed: random.bytes(32)).nodeID
        let room = RoomID.random(random)
        // A PK battle with its proof: the other host's keepalive to this room, stating its score.
        let otherHost = try Identity(seed: random.bytes(32))
        let otherRoom = RoomID.random(random)
        let proof = PKMessage(from: otherRoom, to: room, pk: 77, sent: 1_700_000_000_000, body: .alive(score: 310), sender: otherHost)
        let bodies: [String: EventBody] = [
            "pk-battle": .pkBattle(PKBattle(stage: .score, pk: 77, otherRoom: otherRoom, otherHost: otherHost.nodeID, endsAt: 1_700_000_300_000,
                                            ending: nil, ours: 120, theirs: 310, title: "Night radio", proof: proof.encoded)),
            "chat": .chat(text: "hello, room 你好"),
            "danmaku": .danmaku(text: "666", color: 0xFF_8800, lane: 3),
            "like": .like(total: 12),
            "join": .join(instance: 0x0102_0304_0506_0708, role: .host),
            "leave": .leave(reason: 2),
            "profile": .profile(Profile(nickname: "小明", avatar: "https://example.com/a.png", gender: 2, location: "Berlin")),
            "room-info": .roomInfo(RoomInfo(title: "Evening set", cover: "ipfs:bafy", location: "東京", startedAt: 1_699_999_000_000, chatRate: 40)),
            "census": .census(Census(count: 10_001, likes: 123_456, joiners: [target])),
            "gift": .gift(Gift(gift: 3, count: 3, combo: 0x0102_0304, comboCount: 9)),
            "gift-rank": .giftRank(GiftRank(total: 1_000, top: [GiftRank.Entry(member: target, points: 600), GiftRank.Entry(member: author.nodeID, points: 400)])),
            "quiz": EventBody(QuizQuestion(quiz: 0x0102_0304_0506_0708, endsAt: 1_700_000_030_000, seconds: 30,
                                           question: "Which planet is largest?", options: ["Mars", "Jupiter", "Venus"])),
            "quiz-result": EventBody(QuizResult(quiz: 0x0102_0304_0506_0708, counts: [1, 2, 0], answer: 2, winners: 2,
                                                named: [target, author.nodeID])),
            "kick": .kick(target: target),
            "mute": .mute(target: target, muted: true),
            "room-closed": .roomClosed,
            "stage": .stage(target: target, onStage: false, reason: 3),
            "relay": .relay(RelayPosition(parent: target, depth: 2, slots: 4, children: 1, addresses: [
                PeerAddress(host: .v4(0x7F00_0001), port: 7401), PeerAddress(host: .v6([0xFD] + Array(repeating: 0, count: 14) + [1]), port: 7401)])),
        ]
        var seeds: [String: [UInt8]] = [:]
        for (name, body) in bodies {
            let event = try RoomEvent.make(room: room, author: author, seq: 3, timestamp: 1_700_000_000_000, body: body)
            seeds["event-" + name] = event.encoded
            // The body alone: everything between the header (68 bytes) and the signature (64).
            seeds["body-" + name] = [body.kind.rawValue] + event.encoded.dropFirst(68).dropLast(64)
        }
        return seeds
    }

    /// One gossip message of every type, naming the fixed identities FuzzGossip
    /// sets up (node seed 0x40, peers 0x41…0x44, re-signer 0x45, room 0x47 × 16)
    /// so GRAFTs and digests ask for events its node holds; events are by 0x46.
    static func gossipSeeds() throws -> [String: [UInt8]] {
        func identity(_ n: UInt8) throws -> Identity { try Identity(seed: [UInt8](repeating: n, count: 32)) }
        let node = try identity(0x40).nodeID
        let peer = try identity(0x42).nodeID
        let author = try identity(0x46)
        let room = try RoomID(bytes: [UInt8](repeating: 0x47, count: 16))
        let v4 = PeerRecord(id: peer, address: .ipv4(10, 0, 0, 9, port: 7400))
        let v6 = PeerRecord(id: try identity(0x48).nodeID, address: try PeerAddress(parsing: "[2001:db8::7]:443"))
        func event(_ seq: UInt64, _ body: EventBody, in room: RoomID = room) throws -> [UInt8] {
            try RoomEvent.make(room: room, author: author, seq: seq, timestamp: 1_700_000_000_000 + seq, body: body).encoded
        }
        // DIGEST: after ‖ through ‖ n ‖ n × (author ‖ minSeq ‖ maxSeq ‖ m ‖ m × seq); DigestEntry has no public init.
        var digest = ByteWriter()
        digest.write(UInt8(1))
        digest.write(UInt8(12))
        digest.write(bytes: [UInt8](repeating: 0, count: 32))
        digest.write(bytes: [UInt8](repeating: 0xFF, count: 32))
        digest.write(UInt8(1))
        digest.write(bytes: node.publicKey)
        digest.write(UInt64(1))
        digest.write(UInt64(3))
        digest.write(UInt8(1))
        digest.write(UInt64(2))
        let messages: [String: GossipMessage] = [
            "join": .join,
            "forward-join-v4": .forwardJoin(ttl: 2, peer: v4),
            "forward-join-v6": .forwardJoin(ttl: 0, peer: v6),
            "neighbor-high": .neighbor(high: true),
            "neighbor-low": .neighbor(high: false),
            "neighbor-reply-yes": .neighborReply(accepted: true),
            "neighbor-reply-no": .neighborReply(accepted: false),
            "disconnect": .disconnect,
            "shuffle": .shuffle([v4, v6]),
            "shuffle-reply": .shuffleReply([v6]),
            "event-chat": .event(try event(1, .chat(text: "hello gossip"))[...]),
            "event-chat-later": .event(try event(40, .chat(text: "after a gap"))[...]),
            "event-like": .event(try event(2, .like(total: 5))[...]),
            "event-other-room": .event(try event(3, .chat(text: "wrong room"), in: RoomID(bytes: [UInt8](repeating: 1, count: 16)))[...]),
            "ihave": .ihave([EventID(author: author.nodeID, seq: 7), EventID(author: node, seq: 9)]),
            "graft": .graft([EventID(author: node, seq: 1), EventID(author: node, seq: 3)]),
            "prune": .prune,
            "digest-empty": .digest(after: [UInt8](repeating: 0, count: 32), through: [UInt8](repeating: 0xFF, count: 32), entries: []),
        ]
        var seeds = messages.mapValues(\.bytes)
        seeds["digest"] = digest.bytes
        return seeds
    }
}

/// SwiftPM points `main` at `MakeCorpus_main`. Never called.
@_cdecl("LLVMFuzzerTestOneInput")
public func unusedFuzzTarget(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt { 0 }
