import LVBCore
import LVBCrypto
import LVBTransport

#if canImport(Glibc)
import Glibc
#endif

// Benchmarks for the session layer (Scripts/bench). Each figure comes with a
// reference measured in the same run, so ratios hold on a noisy machine.

let seconds = Double(CommandLine.arguments.dropFirst().first ?? "") ?? 3.0
if CommandLine.arguments.dropFirst(2).first == "handshakes" {
    print("IK handshakes (both sides, in memory) \(Int(HandshakeLoop.run(seconds: seconds))) handshakes/s")
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

func format2(_ v: Double) -> String {
    let r = (v * 100).rounded() / 100
    return String(r)
}
