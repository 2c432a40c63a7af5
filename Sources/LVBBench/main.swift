import LVBCore
import LVBCrypto
import LVBTransport

#if canImport(Glibc)
import Glibc
#endif

// Benchmarks for the session and gossip layers, the VP8 encoder, live media with the
// lvbnode binary as processes, the host's link-mic mix, a relay's forwarding and the media tree
// (Scripts/bench; a second argument "handshakes", "gossip", "vp8", "media", "mix", "pk", "switch", "relay",
// "tree", "seal", "lie", "replay", "presence" or "presence-virtual" runs that one alone; media, mix, switch, tree and presence
// need the binary: see MediaBench.swift; "presence" and "presence-virtual" take the room sizes as a
// third argument, e.g. 20,40,80). Each figure comes with a reference measured in the same run,
// so ratios hold on a noisy machine.

let seconds = Double(CommandLine.arguments.dropFirst().first ?? "") ?? 3.0
if CommandLine.arguments.dropFirst(2).first == "handshakes" {
    print("IK handshakes (both sides, in memory) \(Int(HandshakeLoop.run(seconds: seconds))) handshakes/s")
    exit(0)
}
if CommandLine.arguments.dropFirst(2).first == "gossip" {
    printGossip(try await GossipLoop.run(seconds: seconds))
    exit(0)
}
if CommandLine.arguments.dropFirst(2).first == "vp8" {
    VP8Bench.runAndPrint(seconds: seconds)
    exit(0)
}
if CommandLine.arguments.dropFirst(2).first == "media" {
    MediaBench.runAndPrint(seconds: seconds)
    exit(0)
}
if CommandLine.arguments.dropFirst(2).first == "mix" {
    MixBench.runAndPrint(seconds: seconds)
    exit(0)
}
if CommandLine.arguments.dropFirst(2).first == "pk" {
    PKBench.runAndPrint(seconds: seconds)
    exit(0)
}
if CommandLine.arguments.dropFirst(2).first == "switch" {
    SwitchBench.runAndPrint(seconds: seconds)
    exit(0)
}
if CommandLine.arguments.dropFirst(2).first == "relay" {
    await RelayBench.runAndPrint(seconds: seconds)
    exit(0)
}
if CommandLine.arguments.dropFirst(2).first == "replay" {
    ReplayBench.runAndPrint(seconds: seconds)
    exit(0)
}
if CommandLine.arguments.dropFirst(2).first == "seal" {
    SealBench.runAndPrint(seconds: seconds)
    exit(0)
}
if CommandLine.arguments.dropFirst(2).first == "lie" {
    LieBench.runAndPrint(seconds: seconds)
    exit(0)
}
if CommandLine.arguments.dropFirst(2).first == "tree" {
    TreeBench.runAndPrint(seconds: seconds)
    exit(0)
}
/// `presence 20,40,80`: the room sizes (viewers) the presence bench runs, else its default.
let presenceSizes = CommandLine.arguments.dropFirst(3).first.map { $0.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 } }
    .flatMap { $0.isEmpty ? nil : $0 } ?? PresenceBench.defaultSizes
if CommandLine.arguments.dropFirst(2).first == "presence" {
    PresenceBench.runAndPrint(sizes: presenceSizes)
    exit(0)
}
let virtualSizes = CommandLine.arguments.dropFirst(3).first.map { $0.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 } }
    .flatMap { $0.isEmpty ? nil : $0 } ?? VirtualPresenceBench.defaultSizes
if CommandLine.arguments.dropFirst(2).first == "presence-virtual" {
    VirtualPresenceBench.runAndPrint(sizes: virtualSizes)
    exit(0)
}
let payloadSize = CoreConstants.maxDatagram - MessageSize.transportOverhead - 1  // fills a 1200-byte datagram

print("lvbnode session benchmarks (\(seconds) s per figure, 1 core)")

let plain = try UDPLoop.run(seconds: seconds, datagramSize: CoreConstants.maxDatagram, encrypted: false)
let sealed = try UDPLoop.run(seconds: seconds, datagramSize: CoreConstants.maxDatagram, encrypted: true)
let cryptoOnly = CryptoLoop.run(seconds: seconds, payloadSize: payloadSize)
let handshakes = HandshakeLoop.run(seconds: seconds)

func fmt(_ v: Double) -> String { String(Int(v.rounded())) }
print("")
print("plain UDP send+receive, 1200 B       \(fmt(plain)) packets/s  (reference)")
print("session seal+send+receive+open, 1200 B \(fmt(sealed)) packets/s  ratio \(format2(sealed / plain)) of plain UDP")
print("seal+open only (no sockets), 1200 B  \(fmt(cryptoOnly)) packets/s  (\(fmt(cryptoOnly * 1200 * 8 / 1e6)) Mbit/s)")
print("IK handshakes (both sides, in memory) \(fmt(handshakes)) handshakes/s")
printGossip(try await GossipLoop.run(seconds: seconds))
await RelayBench.runAndPrint(seconds: seconds)
VP8Bench.runAndPrint(seconds: seconds)
MediaBench.runAndPrint(seconds: seconds)
MixBench.runAndPrint(seconds: seconds)
PKBench.runAndPrint(seconds: seconds)
SwitchBench.runAndPrint(seconds: seconds)
TreeBench.runAndPrint(seconds: seconds)
SealBench.runAndPrint(seconds: seconds)
LieBench.runAndPrint(seconds: seconds)
ReplayBench.runAndPrint(seconds: seconds)
PresenceBench.runAndPrint(sizes: presenceSizes)
VirtualPresenceBench.runAndPrint(sizes: virtualSizes)

func format2(_ v: Double) -> String {
    let r = (v * 100).rounded() / 100
    return String(r)
}

func format1(_ v: Double) -> String { String((v * 10).rounded() / 10) }

/// The gossip figures against the goals: all delivered, p99 < 50 ms, < 1.5 copies.
func printGossip(_ r: GossipResult) {
    func row(_ label: String, _ value: String, _ goal: String, _ ok: Bool) {
        func pad(_ s: String, _ n: Int) -> String { s + String(repeating: " ", count: max(1, n - s.count)) }
        print("  " + pad(label, 28) + pad(value, 24) + pad("goal " + goal, 18) + (ok ? "✓" : "✗"))
    }
    let expected = r.events * (r.nodes - 1)
    let p50 = percentile(r.latenciesMS, 0.50), p99 = percentile(r.latenciesMS, 0.99)
    print("")
    print("gossip, \(r.nodes) nodes on loopback UDP (2 threads), \(r.events) events from random authors at \(Int(GossipLoop.eventsPerSecond))/s")
    print(r.ready ? "  overlay ready (every node >= 2 established neighbours) after \(format2(r.setupSeconds)) s"
                  : "  overlay NOT ready after \(format2(r.setupSeconds)) s (some node has < 2 neighbours); measured anyway")
    row("delivery ratio", "\(format2(r.deliveryRatio * 100)) % (\(r.deliveries)/\(expected))", "100 %", expected > 0 && r.deliveries == expected)
    row("delivery latency p50 / p99", "\(format1(p50)) / \(format1(p99)) ms", "p99 < 50 ms", !r.latenciesMS.isEmpty && p99 < 50)
    row("payload copies / delivery", "\(format2(r.copiesPerDelivery)) (\(r.copies)/\(r.delivered))", "< 1.5", r.delivered > 0 && r.copiesPerDelivery < 1.5)
    let late = r.latenciesMS.filter { $0 >= 50 }.count
    print("  deliveries >= 50 ms \(late); grafts \(r.grafts), IHAVE messages \(r.ihaves), events resent on graft or digest \(r.repairs)")
    let starP50 = percentile(r.starLatenciesMS, 0.50), starP99 = percentile(r.starLatenciesMS, 0.99)
    print("  star: \(r.nodes - 1) direct unicasts per event  p50 / p99 \(format1(starP50)) / \(format1(starP99)) ms, \(r.starDeliveries)/\(r.starEvents * (r.nodes - 1)) delivered  (reference)")
    if r.starSessionsMissing > 0 {
        print("  (star: \(r.starSessionsMissing) of \(r.nodes * (r.nodes - 1)) session directions were not up when it began)")
    }
}
