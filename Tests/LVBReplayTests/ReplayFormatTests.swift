import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBReplay
import Testing

@Suite struct ReplayFormatTests {
    static let host = (try? Identity(seed: [UInt8](repeating: 7, count: 32)))!  // invariant: a 32-byte seed
    static let room = (try? RoomID(bytes: Array(1...16)))!  // invariant: 16 bytes

    static func manifest(segments: Int = 3) -> ReplayManifest {
        ReplayManifest(room: room, host: host.nodeID, startedMs: 1_800_000_000_000, title: "Evening live", width: 640, height: 360,
                       audioChannels: 1, ended: true,
                       segments: (0..<segments).map { i in
                           .init(startMs: UInt32(i) * 2000, durationMs: 2000, length: 100, startsWithKeyframe: true,
                                 hash: Blake2b.hash([UInt8(i)], length: 32))
                       })
    }

    @Test func aSegmentRoundTripsAndEveryBadFieldIsRefused() throws {
        let frames = [ReplayFrame(kind: .video, isKeyframe: true, ms: 0, payload: [1, 2, 3]),
                      ReplayFrame(kind: .audio, ms: 0, payload: [9]),
                      ReplayFrame(kind: .audio, ms: 20, payload: [8, 7]),
                      ReplayFrame(kind: .video, ms: 33, payload: [4])]
        let bytes = ReplaySegment.encode(index: 5, frames)
        #expect(bytes.count == 12 + 4 * 10 + 7)
        #expect(try ReplaySegment.parse(bytes[...], index: 5) == frames)
        // Asked for another index, a holder cannot pass one segment off as another.
        #expect(throws: ReplayError.self) { try ReplaySegment.parse(bytes[...], index: 6) }
        var bad: [[UInt8]] = []
        bad.append(Array(bytes.dropLast()))                       // a payload cut short
        var b = bytes; b[0] = 0x58; bad.append(b)                 // bad magic
        b = bytes; b[12] = 3; bad.append(b)                       // unknown kind
        b = bytes; b[13] = 2; bad.append(b)                       // unknown flag
        b = bytes; b[26] = 1; bad.append(b)                       // keyframe flag on audio (the second record's flags)
        b = bytes; b[18...21] = [0, 0, 0, 0]; bad.append(b)       // an empty payload
        b = bytes; b[18...21] = [0, 0x10, 0, 1]; bad.append(b)    // past the video limit
        let backwards = ReplaySegment.encode(index: 0, [ReplayFrame(kind: .audio, ms: 40, payload: [1]), ReplayFrame(kind: .audio, ms: 20, payload: [1])])
        bad.append(backwards)
        for (n, x) in bad.enumerated() {
            #expect(throws: ReplayError.self, "case \(n)") { try ReplaySegment.parse(x[...], index: n == bad.count - 1 ? 0 : 5) }
        }
    }

    @Test func aManifestIsSignedByItsHostAndAnyChangeIsCaught() throws {
        let m = Self.manifest()
        let bytes = m.signed(by: Self.host)
        let parsed = try ReplayManifest.parse(bytes[...])
        #expect(parsed == m)
        #expect(parsed.durationMs == 6000)
        #expect(parsed.id == ReplayID.derive(room: Self.room, host: Self.host.nodeID, startedMs: 1_800_000_000_000))
        #expect(try ReplayID(text: parsed.id.text) == parsed.id)
        // Every byte matters: flip each in turn (the signature's too).
        for i in stride(from: 0, to: bytes.count, by: 7) {
            var b = bytes
            b[i] ^= 0x40
            #expect(throws: ReplayError.self, "byte \(i)") { try ReplayManifest.parse(b[...]) }
        }
        // Signed by someone else: refused, whoever it names as host.
        let other = try Identity(seed: [UInt8](repeating: 8, count: 32))
        #expect(throws: ReplayError.forged("replay manifest not signed by its host \(Self.host.nodeID.short)")) {
            try ReplayManifest.parse(m.signed(by: other)[...])
        }
        for cut in [0, 10, 64, 100, bytes.count - 1] {
            #expect(throws: ReplayError.self) { try ReplayManifest.parse(bytes.prefix(cut)) }
        }
    }

    /// The card a room list carries is checked on its own: the manifest's signature covers it.
    @Test func aManifestsCardVerifiesWithoutItsEntries() throws {
        let m = Self.manifest(segments: 5)
        let (parsed, card) = try ReplayManifest.parseWithCard(m.signed(by: Self.host)[...])
        #expect(parsed == m)
        #expect(card.id == m.id && card.count == 5 && card.durationMs == 10_000 && card.info.title == "Evening live")
        let bytes = card.encoded
        #expect(bytes.count < 300)
        #expect(try ReplayCard.parse(bytes[...]) == card)
        for i in 0..<bytes.count {
            var b = bytes
            b[i] ^= 0x01
            #expect(throws: ReplayError.self, "byte \(i)") { try ReplayCard.parse(b[...]) }
        }
    }

    @Test func segmentsOverlappingInTimeAreRefused() {
        var m = Self.manifest()
        m.segments[1].startMs = 1500
        #expect(throws: ReplayError.self) { try ReplayManifest.parse(m.signed(by: Self.host)[...]) }
    }

    @Test func aTimeFindsItsSegment() {
        let m = Self.manifest(segments: 4)
        #expect(m.segment(at: 0) == 0)
        #expect(m.segment(at: 1999) == 0)
        #expect(m.segment(at: 2000) == 1)
        #expect(m.segment(at: 7999) == 3)
        #expect(m.segment(at: 99_999) == 3)
        #expect(Self.manifest(segments: 0).segment(at: 0) == nil)
    }

    @Test func aSegmentIsCheckedAgainstItsHash() throws {
        let bytes = ReplaySegment.encode(index: 0, [ReplayFrame(kind: .audio, ms: 0, payload: [1, 2])])
        var m = Self.manifest(segments: 1)
        m.segments[0].length = UInt32(bytes.count)
        m.segments[0].hash = Blake2b.hash(bytes, length: 32)
        try m.check(segment: 0, bytes)
        var altered = bytes
        altered[altered.count - 1] ^= 1
        #expect(throws: ReplayError.self) { try m.check(segment: 0, altered) }
        #expect(throws: ReplayError.self) { try m.check(segment: 1, bytes) }
    }
}
