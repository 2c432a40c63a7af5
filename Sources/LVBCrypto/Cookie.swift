import LVBCore

// mac1, mac2 and cookie replies, after WireGuard (whitepaper §5.4.4, §5.4.7):
//   mac1 = MAC(HASH("mac1----" ‖ K), msg_a)      msg_a: message up to mac1
//   mac2 = MAC(cookie, msg_b)                     msg_b: message up to mac2
//   cookie = MAC(R_t, source IP ‖ port)           R_t: random, changes every 2 min
//   reply = XChaCha20Poly1305(HASH("cookie--" ‖ K), nonce, cookie, AD = mac1)
// K is the receiver's static public key, or a fixed label where the sender
// cannot know it yet (XX's first two messages). MAC is keyed BLAKE2b-128.

/// Key material that mac1 and cookie keys derive from.
public enum MacKeyMaterial {
    public static let mac1Label = Array("mac1----".utf8)
    public static let cookieLabel = Array("cookie--".utf8)
    /// Stands in for K on XX messages 1 and 2.
    public static let anonymous = Array("lvbnode xx anonymous responder".utf8)
}

public let macLength = 16
public let cookieNonceLength = XChaChaPoly.nonceLength
public let encryptedCookieLength = 16 + 16

/// Responder side: verifies mac1/mac2 and makes cookies (wireguard-go's CookieChecker).
public final class CookieChecker {
    private let mac1Key: [UInt8]
    private let cookieKey: [UInt8]
    private var secret: [UInt8]
    private var secretSetAt: Instant
    private let clock: Clock
    private let random: RandomSource
    private let secretLifetime: Duration

    public init(keyMaterial: [UInt8], clock: Clock, random: RandomSource, secretLifetime: Duration = .seconds(120)) {
        mac1Key = Blake2b.hash(MacKeyMaterial.mac1Label, keyMaterial, length: 32)
        cookieKey = Blake2b.hash(MacKeyMaterial.cookieLabel, keyMaterial, length: 32)
        self.clock = clock
        self.random = random
        self.secretLifetime = secretLifetime
        secret = random.bytes(32)
        secretSetAt = clock.now()
    }

    /// `message` ends with mac1 ‖ mac2.
    public func checkMAC1(_ message: ArraySlice<UInt8>) -> Bool {
        guard message.count >= 2 * macLength else { return false }
        let macStart = message.endIndex - 2 * macLength
        let expected = Blake2b.mac(key: mac1Key, Array(message[..<macStart]))
        return constantTimeEqual(expected, message[macStart..<macStart + macLength])
    }

    public func checkMAC2(_ message: ArraySlice<UInt8>, source: PeerAddress) -> Bool {
        guard message.count >= 2 * macLength else { return false }
        let mac2Start = message.endIndex - macLength
        let expected = Blake2b.mac(key: currentCookie(for: source), Array(message[..<mac2Start]))
        return constantTimeEqual(expected, message[mac2Start...])
    }

    /// The (nonce, encrypted cookie) of a cookie reply to `message` from `source`.
    public func makeReply(to message: ArraySlice<UInt8>, source: PeerAddress) -> (nonce: [UInt8], sealed: [UInt8]) {
        let macStart = message.endIndex - 2 * macLength
        let mac1 = Array(message[macStart..<macStart + macLength])
        let nonce = random.bytes(cookieNonceLength)
        let sealed = XChaChaPoly.seal(key: cookieKey, nonce: nonce, ad: mac1, plaintext: currentCookie(for: source))
        return (nonce, sealed)
    }

    private func currentCookie(for source: PeerAddress) -> [UInt8] {
        if clock.now() - secretSetAt >= secretLifetime {
            secureZero(&secret)
            secret = random.bytes(32)
            secretSetAt = clock.now()
        }
        return Blake2b.mac(key: secret, source.cookieBytes)
    }
}

/// Initiator side: adds mac1/mac2 and keeps the latest cookie (wireguard-go's CookieGenerator).
public final class CookieGenerator {
    private let mac1Key: [UInt8]
    private let cookieKey: [UInt8]
    private var cookie: [UInt8]?
    private var cookieAt: Instant = Instant(nanoseconds: 0)
    private var lastMAC1: [UInt8]?
    private let clock: Clock
    /// Cookies are used for a little less than the responder keeps its secret.
    private let cookieLifetime: Duration

    public init(keyMaterial: [UInt8], clock: Clock, cookieLifetime: Duration = .seconds(110)) {
        mac1Key = Blake2b.hash(MacKeyMaterial.mac1Label, keyMaterial, length: 32)
        cookieKey = Blake2b.hash(MacKeyMaterial.cookieLabel, keyMaterial, length: 32)
        self.clock = clock
        self.cookieLifetime = cookieLifetime
    }

    /// Fills the last 32 bytes of `message` with mac1 and (if a fresh cookie is held) mac2.
    public func addMACs(_ message: inout [UInt8]) {
        let macStart = message.count - 2 * macLength
        let mac1 = Blake2b.mac(key: mac1Key, Array(message[..<macStart]))
        message.replaceSubrange(macStart..<macStart + macLength, with: mac1)
        lastMAC1 = mac1
        if let cookie, clock.now() - cookieAt < cookieLifetime {
            let mac2 = Blake2b.mac(key: cookie, Array(message[..<(macStart + macLength)]))
            message.replaceSubrange((macStart + macLength)..., with: mac2)
        } else {
            message.replaceSubrange((macStart + macLength)..., with: [UInt8](repeating: 0, count: macLength))
        }
    }

    /// Takes a cookie reply to the last message sent; false if it does not decrypt.
    public func consumeReply(nonce: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>) -> Bool {
        guard let lastMAC1,
              let value = XChaChaPoly.open(key: cookieKey, nonce: Array(nonce), ad: lastMAC1, ciphertext: Array(sealed))
        else { return false }
        cookie = value
        cookieAt = clock.now()
        return true
    }
}

extension PeerAddress {
    /// The address bytes a cookie is bound to: IP then port.
    var cookieBytes: [UInt8] {
        var w = ByteWriter(capacity: 18)
        switch host {
        case let .v4(a): w.write(a)
        case let .v6(b): w.write(bytes: b)
        }
        w.write(port)
        return w.bytes
    }
}
