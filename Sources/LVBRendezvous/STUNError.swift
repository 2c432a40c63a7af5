/// Why bytes are not a usable STUN message. Counted and dropped by the
/// rendezvous; never answered.
public enum STUNError: Error, Equatable, CustomStringConvertible {
    /// Shorter than its header or its length field says.
    case truncated
    /// The top two bits are set or the magic cookie is missing: not STUN.
    case notSTUN
    /// The length field is not a multiple of 4, or disagrees with the datagram.
    case badLength
    /// An attribute runs past the end of the message.
    case attributeOverrun
    /// FINGERPRINT does not match, or is not the last attribute.
    case badFingerprint
    /// An address attribute with an unknown family or a wrong length.
    case badAddress

    public var description: String {
        switch self {
        case .truncated: "STUN message is truncated"
        case .notSTUN: "not a STUN message (no magic cookie)"
        case .badLength: "STUN message length is not a multiple of 4 or disagrees with the datagram"
        case .attributeOverrun: "a STUN attribute runs past the end of the message"
        case .badFingerprint: "STUN FINGERPRINT is wrong or not last"
        case .badAddress: "STUN address attribute has an unknown family or a wrong length"
        }
    }
}
