import LVBCore
import LVBCrypto
import LVBTestSupport
import Testing
@testable import LVBMedia

/// The origin's seals (`MediaSeal`, `StreamSealer`) and the receiver's
/// check (`SealChecker`): what an honest path delivers whole, and each lie a
/// relay can tell.
@Suite struct MediaSealTests {
    static let room = [UInt8](repeating: 0x5A, count: 16)

    /// A sealed stream of `frames` video frames (each `packets` packets) with
    /// audio between them, as the origin numbers and seals them.
    final class Origin {
        let host = Identity.generate()
        var sealer: StreamSealer
        var packetizer = try! VP8Packetizer(maxPayloadSize: 1100, firstPacketReserve: MediaSeal.firstPacketReserve)
        var videoSeq: UInt16
        var audioSeq: UInt16
        var ts: UInt32 = 1000
        var audioTS: UInt32 = 7
        let videoSSRC: UInt32 = 0x1111, audioSSRC: UInt32 = 0x2222

        init(videoSeq: UInt16 = 100, audioSeq: UInt16 = 500, scope: [UInt8] = MediaSealTests.room) {
            self.videoSeq = videoSeq
            self.audioSeq = audioSeq
            let id = host
            sealer = StreamSealer(scope: scope, sign: { id.sign($0) })
        }

        func frame(bytes: Int = 3000, fill: UInt8 = 0x42) -> [RTPPacket] {
            ts &+= 3000
            var packets = try! packetizer.rtpPackets([UInt8](repeating: fill, count: bytes), timestamp: ts, ssrc: videoSSRC,
                                                     sequence: &videoSeq, captureTime: UInt64(ts) << 20)
            sealer.seal(frame: &packets)
            return packets
        }

        func audio(fill: UInt8 = 0x0C) -> RTPPacket {
            var p = try! RTPPacket(payloadType: MediaConstants.audioPayloadType, sequenceNumber: audioSeq, timestamp: audioTS,
                                   ssrc: audioSSRC, payload: [0xFC, fill, fill, fill][...])
            p.setCaptureTime(UInt64(audioTS))
            audioSeq &+= 1
            audioTS &+= 960
            sealer.seal(audio: &p)
            return p
        }
    }

    final class Viewer {
        let checker: SealChecker
        let clock = ManualClock()
        var frames: [[RTPPacket]] = []
        var audio: [RTPPacket] = []
        var refused: [(SealFailure, [UInt16])] = []
        var dropped: [[UInt16]] = []

        init(_ origin: Origin, scope: @escaping () -> [UInt8]? = { MediaSealTests.room }) {
            checker = SealChecker(signer: origin.host.nodeID, scope: scope)
        }

        /// `fromOrigin`: over a session with the origin itself, not through a relay.
        func take(_ packets: [RTPPacket], fromOrigin: Bool = false) {
            // Over the wire: what a relay forwards is bytes.
            for p in packets { collect(checker.receive(try! RTPPacket.parse(p.serialized()), now: clock.now(), fromOrigin: fromOrigin)) }
        }

        func collect(_ outputs: [SealOutput]) {
            for o in outputs {
                switch o {
                case .video(let f): frames.append(f)
                case .audio(let a): audio.append(a)
                case let .forged(why, seqs): refused.append((why, seqs))
                case .dropped(let seqs): dropped.append(seqs)
                }
            }
        }
    }

    @Test func anHonestStreamGoesThroughWholeInAnyOrder() throws {
        let origin = Origin(), viewer = Viewer(origin)
        var sent: [RTPPacket] = []
        for i in 0..<30 {
            sent.append(origin.audio())
            if i % 3 != 2 { sent.append(origin.audio()) }
            sent += origin.frame(bytes: i == 0 ? 9000 : 2500)
        }
        // Every frame's first packet carries a video seal naming its packets
        // (the first frame's also the two audio packets before it, when the
        // stream had no video yet); every later audio packet carries its own.
        let firsts = sent.filter { $0.payloadType == MediaConstants.videoPayloadType && VP8PayloadDescriptor.startsFrame($0.payload) }
        #expect(firsts.count == 30 && firsts.allSatisfy { (try? MediaSeal.of($0))??.kind == .video })
        #expect(try MediaSeal.of(firsts[0])?.audioHashes.count == 2 && firsts.dropFirst().allSatisfy { (try? MediaSeal.of($0))??.audioHashes == [] })
        let audio = sent.filter { $0.payloadType == MediaConstants.audioPayloadType }
        #expect(audio.prefix(2).allSatisfy { (try? MediaSeal.of($0)) == .some(nil) })
        #expect(audio.dropFirst(2).allSatisfy { p in (try? MediaSeal.of(p)).flatMap { $0 }.map { $0.audioHashes.isEmpty && $0.audioFirstSeq == p.sequenceNumber } == true })
        #expect(sent.allSatisfy { $0.serializedLength <= 1100 + MediaConstants.rtpOverhead })
        // Arriving reversed in blocks of seven (reordering, repairs) changes nothing.
        var shuffled: [RTPPacket] = []
        for chunk in stride(from: 0, to: sent.count, by: 7) { shuffled += sent[chunk..<min(chunk + 7, sent.count)].reversed() }
        viewer.take(shuffled)
        #expect(viewer.refused.isEmpty)
        #expect(viewer.frames.count == 30 && viewer.audio.count == 50)
        let delivered = Set(viewer.frames.flatMap { $0 }.map(\.sequenceNumber))
        #expect(delivered == Set(sent.filter { $0.payloadType == MediaConstants.videoPayloadType }.map(\.sequenceNumber)))
        // Copies of what was verified (a repair that crossed its NACK) are ignored, not refused.
        viewer.take(Array(sent.prefix(10)))
        #expect(viewer.refused.isEmpty && viewer.checker.stats.duplicates == 10)
        #expect(origin.sealer.stats.videoSeals == 30 && origin.sealer.stats.audioSeals == 48)
    }

    @Test func anAlteredByteRefusesTheFrameWhichIsAskedForAgainAndComesWhole() {
        let origin = Origin(), viewer = Viewer(origin)
        let honest = origin.frame()
        var lied = honest
        lied[1].payload = lied[1].payload.map { $0 ^ 0x01 }[...]
        viewer.take(lied)
        #expect(viewer.frames.isEmpty)
        #expect(viewer.refused.count == 1 && viewer.refused[0].0 == .signature)
        #expect(viewer.refused[0].1 == honest.map(\.sequenceNumber))
        // The honest copies, asked for again, verify.
        viewer.take(honest)
        #expect(viewer.frames.count == 1 && viewer.frames[0] == honest)
    }

    @Test func aFrameOfTheRelaysOwnAForgedSealAndAStrippedSealAreRefused() throws {
        let origin = Origin(), viewer = Viewer(origin)
        // Its own frame, sealed with its own key: the host's key is the one checked.
        let liar = Origin()
        liar.ts = origin.ts + 90_000
        viewer.take(liar.frame(fill: 0x99))
        #expect(viewer.refused.map(\.0) == [.signature])
        // The host's seal moved onto a frame of its own.
        let honest = origin.frame()
        var spliced = origin.frame(fill: 0x77)
        try spliced[0].setExtension(id: MediaSeal.videoID, try #require(try MediaSeal.of(honest[0])).encoded())
        viewer.take(spliced)
        #expect(viewer.refused.map(\.0) == [.signature, .signature])
        // The seal dropped: refused as soon as the first packet comes.
        var stripped = origin.frame()
        stripped[0].removeExtension(id: MediaSeal.videoID)
        viewer.take([stripped[0]])
        #expect(viewer.refused.last?.0 == .unsealed)
        // A seal on a packet that does not start the frame, and one that does not parse.
        var misplaced = origin.frame()
        try misplaced[1].setExtension(id: MediaSeal.videoID, try #require(try MediaSeal.of(misplaced[0])).encoded())
        viewer.take([misplaced[1]])
        var broken = origin.frame()
        try broken[0].setExtension(id: MediaSeal.videoID, [1, 2, 3])
        viewer.take([broken[0]])
        #expect(viewer.refused.suffix(2).map(\.0) == [.malformed, .malformed])
        #expect(viewer.frames.isEmpty)
    }

    @Test func anOldFrameSentAgainAsNewIsARefusedReplayButALateCopyIsNot() throws {
        // The stream's numbers have come round: packet 1000 was sent 20 s ago.
        let origin = Origin(videoSeq: 1000), viewer = Viewer(origin)
        let old = origin.frame()
        origin.videoSeq = 900
        origin.ts &+= 20 * 90_000
        viewer.take(origin.frame())
        // Numbered after the newest, signed 20 s before it: a replay.
        viewer.take(old)
        #expect(viewer.frames.count == 1 && viewer.refused.map(\.0) == [.replayed])
        // An old frame numbered before the newest (a new parent's GOP) is a late copy, let through.
        let fresh = Origin(videoSeq: 100), v2 = Viewer(fresh)
        let gopStart = fresh.frame()
        fresh.ts &+= 20 * 90_000
        v2.take(fresh.frame())
        v2.take(gopStart)
        #expect(v2.refused.isEmpty && v2.frames.count == 2)
    }

    @Test func withVideoEachAudioPacketCarriesASealOfItsOwnAndPlaysAsItComes() throws {
        let origin = Origin(), viewer = Viewer(origin)
        // Before the first frame the stream counts as audio-only: the frame's seal names the run.
        let a1 = origin.audio(), a2 = origin.audio()
        #expect(try [a1, a2].map { try MediaSeal.of($0) } == [nil, nil])
        viewer.take([a1, a2])
        #expect(viewer.audio.isEmpty)
        viewer.take(origin.frame())
        #expect(viewer.audio == [a1, a2])
        // With video, each audio packet is sealed alone (n = 0, its own number) and goes through at once.
        let b1 = origin.audio()
        let seal = try #require(try MediaSeal.of(b1))
        #expect(seal.kind == .audio && seal.audioHashes.isEmpty && seal.audioFirstSeq == b1.sequenceNumber)
        #expect(seal.encoded().count == 2 + MediaSeal.signatureLength)
        viewer.take([b1])
        #expect(viewer.audio.count == 3)
        // Altered: refused at once (its own seal fails); the honest copy still plays.
        var b2 = origin.audio()
        let honest = b2
        b2.payload = [0xFC, 0xDD][...]
        viewer.take([b2])
        #expect(viewer.refused.map(\.0) == [.signature])
        viewer.take([honest])
        #expect(viewer.audio.count == 4)
        // Its seal on another packet names another number: malformed; renumbered to match, it fails.
        let c1 = origin.audio()
        var c2 = origin.audio()
        try c2.setExtension(id: MediaSeal.audioID, try #require(c1.extensions[MediaSeal.audioID]))
        viewer.take([c2])
        var c3 = c2
        c3.sequenceNumber = c1.sequenceNumber
        viewer.take([c3])
        #expect(viewer.refused.map(\.0) == [.signature, .malformed, .signature])
        // Audio whose seal was stripped waits, then is dropped unplayed.
        var stripped = origin.audio()
        stripped.removeExtension(id: MediaSeal.audioID)
        viewer.take([stripped])
        viewer.clock.advance(by: MediaConstants.sealAudioWait)
        viewer.checker.expire(now: viewer.clock.now())
        #expect(viewer.checker.stats.unverifiedAudio == 1 && viewer.audio.count == 4)
    }

    @Test func aStreamWhoseVideoStopsSealsItsAudioInRunsAgainAfterASecond() throws {
        let origin = Origin()
        _ = origin.frame()
        let alone = (0..<MediaSeal.audioOnlyAfter).map { _ in origin.audio() }
        #expect(alone.allSatisfy { (try? MediaSeal.of($0))??.audioHashes == [] })
        let run = (0..<MediaSeal.maxAudioHashes).map { _ in origin.audio() }
        #expect(try run.map { try MediaSeal.of($0)?.audioHashes.count } == [nil, nil, nil, 4])
        // The next frame names what is left of a run, and the audio after it is sealed alone again.
        let rest = origin.audio()
        let frame = origin.frame()
        #expect(try MediaSeal.of(frame[0])?.audioFirstSeq == rest.sequenceNumber)
        #expect(try MediaSeal.of(origin.audio())?.audioHashes == [])
    }

    @Test func fromTheOriginItselfNothingWaitsForASignature() throws {
        let origin = Origin(), viewer = Viewer(origin)
        _ = origin.frame()
        // A stripped audio packet over the origin's own session plays at once (the session says who sent it).
        var a = origin.audio()
        a.removeExtension(id: MediaSeal.audioID)
        viewer.take([a], fromOrigin: true)
        #expect(viewer.audio == [a])
        // A frame, once whole, with no signature check; the same through a relay is checked.
        let f = origin.frame()
        viewer.take(Array(f.dropFirst()), fromOrigin: true)
        #expect(viewer.frames.isEmpty)
        viewer.take([f[0]], fromOrigin: true)
        #expect(viewer.frames.count == 1 && viewer.checker.stats.signatureChecks == 0 && viewer.checker.stats.fromOrigin == 2)
        let g = origin.frame()
        viewer.take([g[0]], fromOrigin: true)
        viewer.take(Array(g.dropFirst()))
        #expect(viewer.frames.count == 2 && viewer.checker.stats.signatureChecks == 1)
        // Copies of what passed are copies, whichever way they come.
        viewer.take([a] + f)
        #expect(viewer.refused.isEmpty && viewer.checker.stats.duplicates == 1 + f.count)
    }

    @Test func aFeedersSignatureChecksAreCappedAndWhatIsOverWaits() throws {
        let origin = Origin(), viewer = Viewer(origin)
        let frames = (0..<(MediaConstants.sealCheckBurst + 60)).map { _ in origin.frame(bytes: 200) }
        // All at one instant: the first `sealCheckBurst` are checked, the rest wait.
        viewer.take(frames.flatMap { $0 })
        #expect(viewer.checker.stats.signatureChecks == MediaConstants.sealCheckBurst && viewer.frames.count == MediaConstants.sealCheckBurst)
        // A quarter of a second later, a quarter of a second's checks more.
        viewer.clock.advance(by: .milliseconds(250))
        viewer.collect(viewer.checker.retry(now: viewer.clock.now()))
        #expect(viewer.frames.count == MediaConstants.sealCheckBurst + 60 && viewer.refused.isEmpty)
        // A new feeder has checks of its own at once.
        viewer.checker.feederChanged()
        viewer.take((0..<10).flatMap { _ in origin.frame(bytes: 200) })
        #expect(viewer.frames.count == MediaConstants.sealCheckBurst + 70)
    }

    @Test func withNoVideoTheFourthAudioPacketSealsTheRun() throws {
        let origin = Origin(), viewer = Viewer(origin)
        let run = (0..<4).map { _ in origin.audio() }
        #expect(try run.map { try MediaSeal.of($0)?.kind } == [nil, nil, nil, .audio])
        viewer.take(Array(run.prefix(3)))
        #expect(viewer.audio.isEmpty)
        viewer.take([run[3]])
        #expect(viewer.audio == run && origin.sealer.stats.audioSeals == 1)
        // The carrier altered: its seal still names the others, not it.
        var altered = (0..<4).map { _ in origin.audio() }
        altered[3].payload = [0xFC, 0x01][...]
        viewer.take(altered)
        #expect(viewer.refused.map(\.0) == [.audio] && viewer.audio.count == 7)
        // A seal naming other hashes than the host signed is refused, and so is the run.
        var forged = (0..<4).map { _ in origin.audio() }
        var seal = try #require(try MediaSeal.of(forged[3]))
        seal.audioHashes[0] ^= 1
        try forged[3].setExtension(id: MediaSeal.audioID, seal.encoded())
        viewer.take(forged)
        #expect(viewer.refused.map(\.0) == [.audio, .signature] && viewer.audio.count == 7)
    }

    @Test func aFrameAFormerFeederBeganIsCompletedByTheNextOrDroppedBlamingNobody() throws {
        let origin = Origin(), viewer = Viewer(origin)
        // Half of a frame from one parent, the rest from the next: it verifies.
        let whole = origin.frame()
        viewer.take(Array(whole.prefix(1)))
        viewer.checker.feederChanged()
        viewer.take(Array(whole.dropFirst()))
        #expect(viewer.frames.count == 1 && viewer.refused.isEmpty)
        // The old parent's half was a lie: dropped and asked for again, nobody blamed.
        let next = origin.frame()
        var lie = next[1]
        lie.payload = lie.payload.map { $0 ^ 1 }[...]
        viewer.take([lie])
        viewer.checker.feederChanged()
        viewer.take([next[0]] + next.dropFirst(2))
        #expect(viewer.refused.isEmpty && viewer.dropped == [next.map(\.sequenceNumber)])
        viewer.take(next)
        #expect(viewer.frames.count == 2 && viewer.checker.stats.inheritedDropped == 1)
        // What the new parent sends wrongly is its own lie.
        var own = origin.frame()
        own[1].payload = own[1].payload.map { $0 ^ 1 }[...]
        viewer.take(own)
        #expect(viewer.refused.map(\.0) == [.signature])
    }

    @Test func aPacketOfAVerifiedFramesTimestampOutsideItIsAStray() throws {
        let origin = Origin(), viewer = Viewer(origin)
        let frame = origin.frame()
        viewer.take(frame)
        var extra = frame[frame.count - 1]
        extra.sequenceNumber &+= 1
        viewer.take([extra])
        #expect(viewer.refused.map(\.0) == [.stray] && viewer.frames.count == 1)
    }

    @Test func sealsWaitForTheRoomUntilItIsKnownAndAnotherRoomsSealsFail() throws {
        let origin = Origin()
        var known: [UInt8]?
        let viewer = Viewer(origin, scope: { known })
        viewer.take(origin.frame())
        #expect(viewer.frames.isEmpty && viewer.refused.isEmpty && viewer.checker.awaitingScope)
        known = MediaSealTests.room
        viewer.collect(viewer.checker.retry(now: viewer.clock.now()))
        #expect(viewer.frames.count == 1)
        // The same host's stream of another room is not this room's.
        let elsewhere = Viewer(Origin(scope: [UInt8](repeating: 1, count: 16)))
        let other = Origin(scope: [UInt8](repeating: 1, count: 16))
        let strict = SealChecker(signer: other.host.nodeID, scope: MediaSealTests.room)
        let outs = other.frame().flatMap { strict.receive($0, now: elsewhere.clock.now()) }
        #expect(outs.count == 1 && { if case .forged(.signature, _) = outs[0] { true } else { false } }())
    }

    @Test func aNewAudioStreamWhoseNumbersMeetTheOldOnesWaitsForItsOwnSeal() throws {
        let origin = Origin(audioSeq: 10), viewer = Viewer(origin)
        viewer.take([origin.audio(), origin.audio()] + origin.frame())
        #expect(viewer.audio.count == 2)
        // Another SSRC reusing sequence number 10 before its own seal came.
        let fresh = try RTPPacket(payloadType: MediaConstants.audioPayloadType, sequenceNumber: 10, timestamp: 1, ssrc: 0x3333,
                                  payload: [0xFC, 1][...])
        viewer.take([fresh])
        #expect(viewer.refused.isEmpty)
    }

    @Test func theSealSizeIsWhatTheBudgetSays() throws {
        let origin = Origin()
        _ = origin.audio()
        _ = origin.audio()
        let frame = origin.frame()
        let seal = try #require(try MediaSeal.of(frame[0]))
        #expect(seal.audioHashes.count == 2 && seal.framePackets == UInt16(frame.count))
        // 2 + 2 + 16 + 64 bytes of element. The block grows from the capture
        // time's 9 bytes padded to 12 to (2 + 8) + (2 + 84) = 96: 84 more.
        #expect(seal.encoded().count == 84)
        #expect(origin.sealer.stats.bytesAdded == 84)
        #expect(try MediaSeal.parse(seal.encoded(), kind: .video) == seal)
        #expect(throws: MediaError.self) { try MediaSeal.parse(Array(seal.encoded().dropLast()), kind: .video) }
        #expect(throws: MediaError.self) { try MediaSeal.parse([0, 0] + seal.encoded().dropFirst(2), kind: .video) }
    }
}
