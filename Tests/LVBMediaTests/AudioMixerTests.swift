import Foundation
import LVBMedia
import TestAssertions
import Testing

@Suite("Audio mixer")
struct AudioMixerTests {
    static let block = MediaConstants.audioFrameSamples

    /// `count` samples of a sine at `frequency` Hz and `dBFS`, starting at sample `start`.
    static func tone(_ frequency: Double, dBFS: Double, start: Int = 0, count: Int = block) -> [Int16] {
        let amplitude = 32767 * pow(10, dBFS / 20)
        return (start..<(start + count)).map { n in
            Int16((amplitude * sin(2 * .pi * frequency * Double(n) / 48000)).rounded())
        }
    }

    static func level(_ samples: [Int16], at frequency: Double) -> Double { toneLevel(samples, at: frequency) }

    @Test("Two tones at -12 dBFS mix to exactly their sample-wise sum; each mix-minus is the other")
    func tonesSum() {
        let mixer = AudioMixer<String>()
        for b in 0..<50 {
            let host = Self.tone(440, dBFS: -12, start: b * Self.block)
            let guest = Self.tone(660, dBFS: -12, start: b * Self.block)
            let (everyone, minus) = mixer.mix(host: host, guests: ["g": guest])
            #expect(everyone == zip(host, guest).map { $0 &+ $1 })
            #expect(minus == ["g": host])
        }
    }

    @Test("Missing, short and long blocks count as silence or are cut to one block")
    func blockLengths() {
        let mixer = AudioMixer<Int>()
        let short = [Int16](repeating: 1000, count: 100)
        let long = [Int16](repeating: 7, count: 2000)
        let (everyone, minus) = mixer.mix(host: nil, guests: [1: short, 2: long, 3: []])
        #expect(everyone.count == Self.block)
        #expect(everyone.prefix(100).allSatisfy { $0 == 1007 })
        #expect(everyone.dropFirst(100).allSatisfy { $0 == 7 })
        #expect(minus[1]?.allSatisfy { $0 == 7 } == true)
        #expect(minus[2] == short + [Int16](repeating: 0, count: Self.block - 100))
        #expect(minus[3] == everyone)
        let quiet = mixer.mix(host: nil, guests: [:])
        #expect(quiet.everyone == [Int16](repeating: 0, count: Self.block) && quiet.minus.isEmpty)
    }

    @Test("Below the threshold the limiter is bit-exact; above it, it settles at the threshold")
    func limiterUnit() {
        var limiter = AudioLimiter()
        let quiet: [Int32] = [0, 1, -1, 12345, -29000, 29163, -29163]
        #expect(limiter.process(quiet) == quiet.map { Int16($0) })
        let loud = [Int32](repeating: 100_000, count: 960)
        let out = limiter.process(loud)
        #expect(out.allSatisfy { $0 > 0 })
        #expect(abs(Float(out.last ?? 0) - MixConstants.limiterThreshold) <= 2)
    }

    @Test("Three full-scale guests and a full-scale host stay in range and at most at the threshold")
    func loudInputs() {
        let mixer = AudioMixer<Int>()
        // The limiter sees the whole block before it, so its attack ramps down
        // ahead of each peak: no overshoot beyond rounding.
        let ceiling = Double(MixConstants.limiterThreshold) + 1
        for b in 0..<50 {
            let start = b * Self.block
            let host = Self.tone(440, dBFS: 0, start: start)
            let guests = [1: Self.tone(440, dBFS: 0, start: start), 2: Self.tone(550, dBFS: 0, start: start),
                          3: Self.tone(660, dBFS: 0, start: start)]
            let (everyone, minus) = mixer.mix(host: host, guests: guests)
            let sums = (0..<Self.block).map { i in Int(host[i]) + guests.values.reduce(0) { $0 + Int($1[i]) } }
            for (i, sample) in everyone.enumerated() {
                // No wrap-around: a loud sum keeps its sign.
                if abs(sums[i]) > 1000 { #expect((sample > 0) == (sums[i] > 0)) }
                #expect(Double(abs(Int(sample))) <= ceiling)
            }
            for output in minus.values {
                #expect(output.allSatisfy { Double(abs(Int($0))) <= ceiling })
            }
            // Limited, not silenced: the loud mix stays loud.
            #expect(everyone.map { abs(Int($0)) }.max() ?? 0 > 25000)
        }
    }

    @Test("Each mix-minus lacks its own guest's tone (> 40 dB below the others)")
    func mixMinus() {
        let mixer = AudioMixer<String>()
        let frequencies = ["host": 440.0, "a": 660, "b": 880, "c": 1320]
        var outputs: [String: [Int16]] = [:]
        // Ten blocks: 200 ms, so the Goertzel bins are 5 Hz wide.
        for b in 0..<10 {
            let start = b * Self.block
            let guests = ["a": Self.tone(660, dBFS: -12, start: start), "b": Self.tone(880, dBFS: -12, start: start),
                          "c": Self.tone(1320, dBFS: -12, start: start)]
            let (everyone, minus) = mixer.mix(host: Self.tone(440, dBFS: -12, start: start), guests: guests)
            outputs["everyone", default: []] += everyone
            for (key, samples) in minus { outputs[key, default: []] += samples }
        }
        for guest in ["a", "b", "c"] {
            guard let output = outputs[guest], let own = frequencies[guest] else {
                Issue.record("no mix-minus for \(guest)")
                continue
            }
            let ownLevel = Self.level(output, at: own)
            for (other, frequency) in frequencies where other != guest {
                #expect(Self.level(output, at: frequency) - ownLevel > 40, "\(guest) hears itself against \(other)")
                #expect(abs(Self.level(output, at: frequency) + 12) < 0.5)
            }
        }
        for frequency in frequencies.values {
            #expect(abs(Self.level(outputs["everyone"] ?? [], at: frequency) + 12) < 0.5)
        }
    }

    @Test("The host's level stays within 1 dB before, during and after a guest is on stage")
    func hostLevelSteady() {
        let mixer = AudioMixer<Int>()
        var phases: [[Int16]] = [[], [], []]
        for b in 0..<30 {
            let start = b * Self.block
            let host = Self.tone(440, dBFS: -6, start: start)
            let onStage = (10..<20).contains(b)
            let guests = onStage ? [7: Self.tone(660, dBFS: -12, start: start)] : [:]
            phases[b / 10] += mixer.mix(host: host, guests: guests).everyone
        }
        let levels = phases.map { Self.level($0, at: 440) }
        for level in levels { #expect(abs(level + 6) < 1, "host at \(level) dBFS") }
        #expect(Self.level(phases[1], at: 660) > -13)
        #expect(Self.level(phases[2], at: 660) < -80)
    }

    @Test("A guest who leaves the stage and returns gets a fresh limiter")
    func limiterDroppedOnLeave() {
        let mixer = AudioMixer<Int>()
        let loud = Self.tone(440, dBFS: 0)
        // Guest 1 hears host + guest 2, both full scale: its limiter turns down.
        let first = mixer.mix(host: loud, guests: [1: [], 2: loud]).minus[1] ?? []
        #expect(Double(first.map { abs(Int($0)) }.max() ?? 0) <= Double(MixConstants.limiterThreshold) + 1)
        _ = mixer.mix(host: nil, guests: [2: []])
        let quiet = Self.tone(440, dBFS: -20)
        #expect(mixer.mix(host: quiet, guests: [1: [], 2: []]).minus[1] == quiet)
        // And remove() forgets as well.
        _ = mixer.mix(host: loud, guests: [1: [], 2: loud])
        mixer.remove(1)
        #expect(mixer.mix(host: quiet, guests: [1: [], 2: []]).minus[1] == quiet)
    }
}
