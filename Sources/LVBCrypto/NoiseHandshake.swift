import LVBCore

/// The Noise handshake patterns lvbnode speaks: IK when the initiator knows the
/// responder's static key (a join ticket carries it), XX when it knows only an address.
public enum NoisePattern: Sendable {
    case IK, XX

    /// The full protocol name (spec §8), hashed into the handshake.
    public var protocolName: String {
        switch self {
        case .IK: "Noise_IK_25519_ChaChaPoly_BLAKE2b"
        case .XX: "Noise_XX_25519_ChaChaPoly_BLAKE2b"
        }
    }

    // Spec §7.5: IK is "<- s ... -> e, es, s, ss  <- e, ee, se";
    // XX is "-> e  <- e, ee, s, es  -> s, se". Messages alternate, initiator first.
    var messages: [[NoiseToken]] {
        switch self {
        case .IK: [[.e, .es, .s, .ss], [.e, .ee, .se]]
        case .XX: [[.e], [.e, .ee, .s, .es], [.s, .se]]
        }
    }
}

/// A token of a message pattern (spec §7.1).
enum NoiseToken { case e, s, ee, es, se, ss }

/// Which side of a Noise handshake this node plays (spec §5.3).
public enum NoiseRole: Sendable { case initiator, responder }

/// An X25519 key pair for Noise's DH functions (spec §4.1, GENERATE_KEYPAIR).
public struct NoiseKeyPair: Sendable, CustomStringConvertible {
    public let privateKey: [UInt8]
    public let publicKey: [UInt8]

    /// A private key that is not 32 bytes yields an empty public key, which
    /// `NoiseHandshake` rejects with `.invalidKey`.
    public init(privateKey: [UInt8]) {
        self.privateKey = privateKey
        publicKey = privateKey.count == X25519.keyLength ? X25519.publicKey(privateKey: privateKey) : []
    }

    public static func generate(random: RandomSource) -> NoiseKeyPair {
        NoiseKeyPair(privateKey: random.bytes(X25519.keyLength))
    }

    /// Shows the public half only, so logs never carry the private key.
    public var description: String { "NoiseKeyPair(public: \(Hex.encode(publicKey)))" }
}

/// A Noise HandshakeState (spec §5.3) for one side of an IK or XX handshake.
/// Any error from `writeMessage`/`readMessage` is final: the object is dead and
/// every later call throws `.failed`. In XX the first message's payload is not
/// authenticated (spec §7.7); the handshake as a whole still fails if it was altered.
public final class NoiseHandshake {
    /// Noise messages are at most 65535 bytes (spec §3).
    public static let maxMessageLength = 65535

    private let pattern: NoisePattern
    private let role: NoiseRole
    private let random: RandomSource
    private var symmetric: NoiseSymmetricState
    private var s: [UInt8]
    private let sPublic: [UInt8]
    private var e: [UInt8] = []
    private var ePublic: [UInt8] = []
    private var rs: [UInt8]?
    private var re: [UInt8]?
    /// A static key the peer must turn out to have, where the pattern transmits it.
    private let expectedRemoteStatic: [UInt8]?
    private var transportKeys: (send: [UInt8], receive: [UInt8])?
    private var dead = false

    public private(set) var messageIndex = 0

    /// `remoteStatic` is the responder's key for an IK initiator (required); on any
    /// other side it pins the key the peer must send (else `.invalidKey`).
    /// `localEphemeral` is for test vectors only; normally `random` makes one.
    // Initialize (spec §5.3): InitializeSymmetric(protocol_name), MixHash(prologue),
    // then MixHash of each pre-message public key (§7.1) — for IK, the responder's s.
    public init(pattern: NoisePattern, role: NoiseRole, prologue: [UInt8], localStatic: NoiseKeyPair,
                remoteStatic: [UInt8]? = nil, localEphemeral: NoiseKeyPair? = nil,
                random: RandomSource) throws(NoiseError) {
        guard localStatic.publicKey.count == X25519.keyLength else { throw .invalidKey }
        if let remoteStatic, remoteStatic.count != X25519.keyLength { throw .invalidKey }
        if let localEphemeral, localEphemeral.publicKey.count != X25519.keyLength { throw .invalidKey }
        let preKnown = pattern == .IK && role == .initiator
        if preKnown && remoteStatic == nil { throw .missingRemoteStatic }

        self.pattern = pattern
        self.role = role
        self.random = random
        symmetric = NoiseSymmetricState(protocolName: pattern.protocolName)
        s = localStatic.privateKey.map { $0 }  // own buffers, so wiping zeroes our copies
        sPublic = localStatic.publicKey
        if let localEphemeral {
            e = localEphemeral.privateKey.map { $0 }
            ePublic = localEphemeral.publicKey
        }
        rs = preKnown ? remoteStatic : nil
        expectedRemoteStatic = preKnown ? nil : remoteStatic

        symmetric.mixHash(prologue)
        if pattern == .IK {
            symmetric.mixHash(role == .initiator ? (remoteStatic ?? []) : sPublic)
        }
    }

    deinit { wipeSecrets() }
    public var isComplete: Bool { !dead && transportKeys != nil }

    public var isMyTurnToWrite: Bool {
        !dead && messageIndex < pattern.messages.count && (messageIndex % 2 == 0) == (role == .initiator)
    }

    /// The peer's X25519 static key, once known (from the start for an IK initiator).
    public var remoteStaticKey: [UInt8]? { rs }

    /// The handshake hash `h` (64 bytes), for channel binding.
    public var handshakeHash: [UInt8] { symmetric.h }

    // WriteMessage (spec §5.3): process each token, then EncryptAndHash(payload).
    public func writeMessage(payload: [UInt8]) throws(NoiseError) -> [UInt8] {
        try guarded { () throws(NoiseError) -> [UInt8] in
            guard isMyTurnToWrite else { throw .outOfOrder }
            let tokens = pattern.messages[messageIndex]
            guard minimumLength(tokens) + payload.count <= Self.maxMessageLength else { throw .malformed }
            var out: [UInt8] = []
            for token in tokens {
                switch token {
                case .e:
                    if e.isEmpty {
                        e = random.bytes(X25519.keyLength)
                        ePublic = X25519.publicKey(privateKey: e)
                    }
                    out += ePublic
                    symmetric.mixHash(ePublic)
                case .s:
                    out += try symmetric.encryptAndHash(sPublic)
                case .ee, .es, .se, .ss:
                    try mixDH(token)
                }
            }
            out += try symmetric.encryptAndHash(payload)
            advance()
            return out
        }
    }

    // ReadMessage (spec §5.3): process each token, then DecryptAndHash(payload).
    public func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        try guarded { () throws(NoiseError) -> [UInt8] in
            guard messageIndex < pattern.messages.count, !isMyTurnToWrite else { throw .outOfOrder }
            let tokens = pattern.messages[messageIndex]
            guard message.count <= Self.maxMessageLength, message.count >= minimumLength(tokens) else {
                throw .malformed
            }
            var offset = 0
            func take(_ n: Int) -> [UInt8] {  // lengths were checked against minimumLength above
                defer { offset += n }
                return Array(message[offset..<offset + n])
            }
            for token in tokens {
                switch token {
                case .e:
                    let key = take(X25519.keyLength)
                    re = key
                    symmetric.mixHash(key)
                case .s:
                    let sealed = take(X25519.keyLength + (symmetric.hasKey ? ChaChaPoly.tagLength : 0))
                    let key = try symmetric.decryptAndHash(sealed)
                    if let expected = expectedRemoteStatic, !constantTimeEqual(key, expected) { throw .invalidKey }
                    rs = key
                case .ee, .es, .se, .ss:
                    try mixDH(token)
                }
            }
            let payload = try symmetric.decryptAndHash(Array(message[offset...]))
            advance()
            return payload
        }
    }

    /// The transport keys (spec §5.2 Split) oriented for this side: the initiator
    /// sends with the first and receives with the second, the responder the reverse.
    public func split() throws(NoiseError) -> (send: [UInt8], receive: [UInt8]) {
        guard !dead else { throw .failed }
        guard let transportKeys else { throw .notComplete }
        return transportKeys
    }
    /// Runs one step; any error kills the handshake and zeroes its secrets.
    private func guarded<T>(_ step: () throws(NoiseError) -> T) throws(NoiseError) -> T {
        guard !dead else { throw .failed }
        do {
            return try step()
        } catch {
            dead = true
            wipeSecrets()
            throw error
        }
    }

    // The DH tokens (spec §5.3): ee = DH(e, re); es = DH(e, rs) for the initiator,
    // DH(s, re) for the responder; se the mirror of es; ss = DH(s, rs). Then MixKey.
    private func mixDH(_ token: NoiseToken) throws(NoiseError) {
        let initiator = role == .initiator
        let pair: ([UInt8], [UInt8]?) = switch token {
        case .ee: (e, re)
        case .es: initiator ? (e, rs) : (s, re)
        case .se: initiator ? (s, re) : (e, rs)
        case .ss: (s, rs)
        case .e, .s: ([], nil)
        }
        guard let remote = pair.1, var shared = X25519.sharedSecret(privateKey: pair.0, publicKey: remote) else {
            throw .invalidKey
        }
        defer { secureZero(&shared) }
        symmetric.mixKey(shared)
    }

    /// The shortest message a step can be: keys plus the tags present once a key is set.
    private func minimumLength(_ tokens: [NoiseToken]) -> Int {
        var keyed = symmetric.hasKey
        var length = 0
        for token in tokens {
            switch token {
            case .e: length += X25519.keyLength
            case .s: length += X25519.keyLength + (keyed ? ChaChaPoly.tagLength : 0)
            case .ee, .es, .se, .ss: keyed = true
            }
        }
        return length + (keyed ? ChaChaPoly.tagLength : 0)
    }

    private func advance() {
        messageIndex += 1
        guard messageIndex == pattern.messages.count else { return }
        let keys = symmetric.split()
        transportKeys = role == .initiator ? (keys.first, keys.second) : (keys.second, keys.first)
        wipeSecrets(keepingTransportKeys: true)
    }

    private func wipeSecrets(keepingTransportKeys: Bool = false) {
        secureZero(&s)
        secureZero(&e)
        symmetric.wipe()
        if !keepingTransportKeys, var keys = transportKeys {
            transportKeys = nil
            secureZero(&keys.send)
            secureZero(&keys.receive)
        }
    }
}
