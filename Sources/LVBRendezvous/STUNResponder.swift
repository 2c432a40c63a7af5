import LVBCore

/// Which of the rendezvous's two STUN ports a request came in on.
public enum STUNPort: Sendable, Equatable {
    /// The rendezvous's own port (sessions and STUN).
    case primary
    /// The alternate port (`--alternate-port`): STUN Binding only.
    case alternate
}

/// What the rendezvous does with a datagram that may be STUN.
public enum STUNVerdict: Equatable, Sendable {
    /// Not STUN at all: hand it to the session layer.
    case notSTUN
    /// STUN, answered with these bytes (never more than 3× the request).
    case answer([UInt8])
    /// STUN whose answer goes out from the other port (RFC 5780 §6.1, a
    /// CHANGE-REQUEST with the change-port flag); at most 3× the request too.
    case answerFromOtherPort([UInt8])
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
///
/// With an alternate port (RFC 5780 §6.1, NAT behaviour discovery with
/// one IP address): answers from either port carry OTHER-ADDRESS, the
/// other port's address, when it fits the 3× bound; a CHANGE-REQUEST with
/// the change-port flag is answered from the other port. The change-IP
/// flag cannot be honoured with one address and gets a 420 naming
/// CHANGE-REQUEST, so a client never takes a same-IP answer for one from
/// another IP (and misjudges its NAT's filtering as open).
public struct STUNResponder: Sendable {
    /// The primary port's bound address (its IP may be a wildcard), and the alternate port (nil: none).
    public let primary: PeerAddress?
    public let alternatePort: UInt16?

    public init(primary: PeerAddress? = nil, alternatePort: UInt16? = nil) {
        self.primary = primary
        self.alternatePort = primary == nil ? nil : alternatePort
    }

    private static let understood: Set<UInt16> = [
        RendezvousConstants.Attribute.mappedAddress, RendezvousConstants.Attribute.username,
        RendezvousConstants.Attribute.messageIntegrity, RendezvousConstants.Attribute.messageIntegritySHA256,
        RendezvousConstants.Attribute.xorMappedAddress, RendezvousConstants.Attribute.errorCode,
        RendezvousConstants.Attribute.realm, RendezvousConstants.Attribute.nonce,
        RendezvousConstants.Attribute.userhash, RendezvousConstants.Attribute.passwordAlgorithm,
        RendezvousConstants.Attribute.unknownAttributes, RendezvousConstants.Attribute.priority,
        RendezvousConstants.Attribute.useCandidate, RendezvousConstants.Attribute.changeRequest,
    ]

    /// The verdict on `datagram` from `source`, which arrived on `port`.
    public func answer(_ datagram: ArraySlice<UInt8>, from source: PeerAddress, on port: STUNPort = .primary) -> STUNVerdict {
        guard STUNMessage.looksLikeSTUN(datagram) else { return .notSTUN }
        let request: STUNMessage
        do { request = try STUNMessage.parse(datagram) } catch { return .dropped("\(error)") }
        guard request.type == RendezvousConstants.MessageType.bindingRequest else {
            return .dropped("STUN message type 0x\(Hex.encode([UInt8(request.type >> 8), UInt8(request.type & 0xFF)])) is not a Binding request")
        }
        let fingerprint = request.attribute(RendezvousConstants.Attribute.fingerprint) != nil
        var unknown = request.attributes.filter { $0.isComprehensionRequired && !Self.understood.contains($0.type) }.map(\.type)
        // RFC 5780 §7.2: four bytes, the flags in the last.
        var flags: UInt8 = 0
        if let change = request.attribute(RendezvousConstants.Attribute.changeRequest) {
            guard change.value.count == RendezvousConstants.changeRequestSize else {
                return .dropped("CHANGE-REQUEST is \(change.value.count) bytes, not \(RendezvousConstants.changeRequestSize)")
            }
            flags = change.value[RendezvousConstants.changeRequestSize - 1]
        }
        let other = otherAddress(for: source, arrivedOn: port)
        let changePort = flags & RendezvousConstants.changePortFlag != 0
        if flags & RendezvousConstants.changeIPFlag != 0 || (changePort && other == nil) {
            unknown.append(RendezvousConstants.Attribute.changeRequest)
        }
        let limit = 3 * datagram.count
        var bytes: [UInt8]
        if unknown.isEmpty {
            let mapped = STUNAttribute(type: RendezvousConstants.Attribute.xorMappedAddress,
                                       value: STUNAddress.encodeXOR(source, transactionID: request.transactionID))
            var response = STUNMessage(type: RendezvousConstants.MessageType.bindingSuccess, transactionID: request.transactionID,
                                       attributes: [mapped])
            if let other { response.attributes.append(STUNAttribute(type: RendezvousConstants.Attribute.otherAddress, value: STUNAddress.encode(other))) }
            bytes = response.encoded(fingerprint: fingerprint)
            // OTHER-ADDRESS is the first thing left out for the 3× bound (a bare 20-byte IPv6 request).
            if bytes.count > limit, other != nil {
                response.attributes.removeLast()
                bytes = response.encoded(fingerprint: fingerprint)
            }
        } else {
            let response = STUNMessage(type: RendezvousConstants.MessageType.bindingError, transactionID: request.transactionID,
                                       attributes: [Self.errorCode(RendezvousConstants.unknownAttributeError, "Unknown Attribute"),
                                                    Self.unknownAttributes(unknown)])
            bytes = response.encoded(fingerprint: fingerprint)
        }
        guard bytes.count <= limit else { return .dropped("answer would be \(bytes.count) bytes for \(datagram.count)") }
        return unknown.isEmpty && changePort ? .answerFromOtherPort(bytes) : .answer(bytes)
    }

    /// OTHER-ADDRESS for a request that came in on `port`: the other port
    /// at the primary's IP; at the unspecified address of the source's
    /// family when the primary is bound to a wildcard (meaning: the
    /// address the request was sent to, which the client knows and this
    /// socket does not).
    func otherAddress(for source: PeerAddress, arrivedOn port: STUNPort) -> PeerAddress? {
        guard let primary, let alternatePort else { return nil }
        let otherPort = port == .primary ? alternatePort : primary.port
        if primary.host == .v4(0) || primary.isIPv6Unspecified {
            return PeerAddress(host: source.isIPv4 ? .v4(0) : .v6([UInt8](repeating: 0, count: 16)), port: otherPort)
        }
        return PeerAddress(host: primary.host, port: otherPort)
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
