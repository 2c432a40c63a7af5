import LVBCore

/// What the rendezvous does with a datagram that may be STUN.
public enum STUNVerdict: Equatable, Sendable {
    /// Not STUN at all: hand it to the session layer.
    case notSTUN
    /// STUN, answered with these bytes (never more than 3× the request).
    case answer([UInt8])
    /// STUN that gets no answer (a response, an indication, malformed); counted.
    case dropped(String)
}

/// Answers STUN Binding requests (RFC 8489 §6.3, §7.3) on the rendezvous
/// port, sans-IO, so a node learns its reflexive address and stock STUN
/// clients work against it. No credentials: MESSAGE-INTEGRITY in a request
/// is ignored (§9 lets a server without authentication do so). A request
/// with comprehension-required attributes it does not know gets a 420
/// error listing them (§6.3.1). Answers carry XOR-MAPPED-ADDRESS, and a
/// FINGERPRINT when the request had one; every answer is at most three
/// times the size of its request, so the port is no amplifier.
public struct STUNResponder: Sendable {
    public init() {}

    private static let understood: Set<UInt16> = [
        RendezvousConstants.Attribute.mappedAddress, RendezvousConstants.Attribute.username,
        RendezvousConstants.Attribute.messageIntegrity, RendezvousConstants.Attribute.messageIntegritySHA256,
        RendezvousConstants.Attribute.xorMappedAddress, RendezvousConstants.Attribute.errorCode,
        RendezvousConstants.Attribute.realm, RendezvousConstants.Attribute.nonce,
        RendezvousConstants.Attribute.userhash, RendezvousConstants.Attribute.passwordAlgorithm,
        RendezvousConstants.Attribute.unknownAttributes, RendezvousConstants.Attribute.priority,
        RendezvousConstants.Attribute.useCandidate,
    ]

    public func answer(_ datagram: ArraySlice<UInt8>, from source: PeerAddress) -> STUNVerdict {
        guard STUNMessage.looksLikeSTUN(datagram) else { return .notSTUN }
        let request: STUNMessage
        do { request = try STUNMessage.parse(datagram) } catch { return .dropped("\(error)") }
        guard request.type == RendezvousConstants.MessageType.bindingRequest else {
            return .dropped("STUN message type 0x\(Hex.encode([UInt8(request.type >> 8), UInt8(request.type & 0xFF)])) is not a Binding request")
        }
        let fingerprint = request.attribute(RendezvousConstants.Attribute.fingerprint) != nil
        let unknown = request.attributes.filter { $0.isComprehensionRequired && !Self.understood.contains($0.type) }.map(\.type)
        var response: STUNMessage
        if unknown.isEmpty {
            response = STUNMessage(type: RendezvousConstants.MessageType.bindingSuccess, transactionID: request.transactionID,
                                   attributes: [STUNAttribute(type: RendezvousConstants.Attribute.xorMappedAddress,
                                                              value: STUNAddress.encodeXOR(source, transactionID: request.transactionID))])
        } else {
            response = STUNMessage(type: RendezvousConstants.MessageType.bindingError, transactionID: request.transactionID,
                                   attributes: [Self.errorCode(RendezvousConstants.unknownAttributeError, "Unknown Attribute"),
                                                Self.unknownAttributes(unknown)])
        }
        let bytes = response.encoded(fingerprint: fingerprint)
        guard bytes.count <= 3 * datagram.count else { return .dropped("answer would be \(bytes.count) bytes for \(datagram.count)") }
        return .answer(bytes)
    }

    /// ERROR-CODE (§14.8): class (hundreds) and number, then a UTF-8 reason.
    static func errorCode(_ code: Int, _ reason: String) -> STUNAttribute {
        STUNAttribute(type: RendezvousConstants.Attribute.errorCode,
                      value: [0, 0, UInt8(code / 100), UInt8(code % 100)] + Array(reason.utf8))
    }

    /// UNKNOWN-ATTRIBUTES (§14.9): the types, two bytes each.
    static func unknownAttributes(_ types: [UInt16]) -> STUNAttribute {
        STUNAttribute(type: RendezvousConstants.Attribute.unknownAttributes,
                      value: types.prefix(RendezvousConstants.maxListedUnknownAttributes).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
    }
}
