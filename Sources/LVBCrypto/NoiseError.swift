/// Why a Noise handshake or cipher operation was refused (Noise spec §5).
public enum NoiseError: Error, Equatable {
    /// A message was written or read when it was not this side's turn, or after the handshake ended.
    case outOfOrder
    /// A message's length does not fit the pattern step, or exceeds the 65535-byte limit (spec §3).
    case malformed
    /// An AEAD tag did not verify: the message was altered, or the peer holds different keys.
    case decryptFailed
    /// A key had the wrong length, a DH produced all zeros, or a static key differed from the one expected.
    case invalidKey
    /// The pattern needs the responder's static key in advance (IK initiator) and none was given.
    case missingRemoteStatic
    /// Transport keys were asked for before the handshake finished.
    case notComplete
    /// The 64-bit nonce reached 2^64-1, which the spec reserves (§5.1); the session must rekey or end.
    case nonceExhausted
    /// The handshake already failed once; it is dead and must be discarded.
    case failed
}
