import LVBCore
import Testing
@testable import LVBRendezvous

private func hex(_ s: String) -> [UInt8] {
    (try? Hex.decode(s.filter { !$0.isWhitespace })) ?? []
}

/// RFC 5769 test vectors, byte for byte as the RFC prints them.
enum RFC5769 {
    static let transactionID = hex("b7e7a701 bc34d686 fa87dfae")

    /// §2.1 Sample Request: SOFTWARE, PRIORITY, ICE-CONTROLLED, USERNAME,
    /// MESSAGE-INTEGRITY, FINGERPRINT (padding bytes are spaces).
    static let request = hex("""
        00010058 2112a442 b7e7a701 bc34d686 fa87dfae
        80220010 5354554e 20746573 7420636c 69656e74
        00240004 6e0001ff
        80290008 932ff9b1 51263b36
        00060009 6576746a 3a683676 59202020
        00080014 9aeaa70c bfd8cb56 781ef2b5 b2d3f249 c1b571a2
        80280004 e57a3bcf
        """)

    /// §2.2 Sample IPv4 Response: 192.0.2.1 port 32853.
    static let ipv4Response = hex("""
        0101003c 2112a442 b7e7a701 bc34d686 fa87dfae
        8022000b 74657374 20766563 746f7220
        00200008 0001a147 e112a643
        00080014 2b91f599 fd9e90c3 8c7489f9 2af9ba53 f06be7d7
        80280004 c07d4c96
        """)

    /// §2.3 Sample IPv6 Response: 2001:db8:1234:5678:11:2233:4455:6677 port 32853.
    static let ipv6Response = hex("""
        01010048 2112a442 b7e7a701 bc34d686 fa87dfae
        8022000b 74657374 20766563 746f7220
        00200014 0002a147 0113a9fa a5d3f179 bc25f4b5 bed2b9d9
        00080014 a382954e 4be67bf1 1784c97c 8292c275 bfe3ed41
        80280004 c8fb0b4c
        """)
}

@Suite("STUN (RFC 8489) against the RFC 5769 vectors")
struct STUNTests {
    @Test func theSampleRequestParsesItsFingerprintHoldsAndItReencodesByteForByte() throws {
        #expect(RFC5769.request.count == 108)
        #expect(STUNMessage.looksLikeSTUN(RFC5769.request[...]))
        let m = try STUNMessage.parse(RFC5769.request[...])
        #expect(m.type == RendezvousConstants.MessageType.bindingRequest)
        #expect(m.transactionID == RFC5769.transactionID)
        #expect(m.attributes.map(\.type) == [0x8022, 0x0024, 0x8029, 0x0006, 0x0008, 0x8028])
        #expect(m.attribute(RendezvousConstants.Attribute.software)?.value == Array("STUN test client".utf8))
        #expect(m.attribute(RendezvousConstants.Attribute.username)?.value == Array("evtj:h6vY".utf8))
        #expect(m.encoded == RFC5769.request)
        #expect(m.encoded(fingerprint: true) == RFC5769.request)
    }

    @Test func theSampleResponsesCarryTheirMappedAddressesAndReencodeExactly() throws {
        for (vector, expected) in [(RFC5769.ipv4Response, "192.0.2.1:32853"),
                                   (RFC5769.ipv6Response, "[2001:db8:1234:5678:11:2233:4455:6677]:32853")] {
            let m = try STUNMessage.parse(vector[...])
            #expect(m.type == RendezvousConstants.MessageType.bindingSuccess)
            let xor = try #require(m.attribute(RendezvousConstants.Attribute.xorMappedAddress))
            let address = try STUNAddress.decodeXOR(xor.value, transactionID: m.transactionID)
            #expect(address == (try PeerAddress(parsing: expected)))
            #expect(address.description == expected)
            // Our encoding of that address is the vector's, bit for bit.
            #expect(STUNAddress.encodeXOR(address, transactionID: m.transactionID) == xor.value)
            #expect(m.attribute(RendezvousConstants.Attribute.software)?.value == Array("test vector".utf8))
            #expect(m.encoded(fingerprint: true) == vector)
        }
    }

    @Test func malformedMessagesAreRefusedWithTheirReason() {
        let r = RFC5769.request
        expectSTUN(.truncated, Array(r.prefix(19)))
        var cookie = r
        cookie[4] ^= 1
        expectSTUN(.notSTUN, cookie)
        var topBits = r
        topBits[0] |= 0x80
        expectSTUN(.notSTUN, topBits)
        expectSTUN(.badLength, Array(r.prefix(104)))  // header still says 0x58
        var overrun = Array(r.prefix(20)) + [0x80, 0x22, 0x00, 0x20, 0x41, 0x42, 0x43, 0x44]
        overrun[3] = 8
        expectSTUN(.attributeOverrun, overrun)
        var flipped = r
        flipped[30] ^= 0x01  // inside SOFTWARE: the FINGERPRINT no longer holds
        expectSTUN(.badFingerprint, flipped)
        // A FINGERPRINT that is not the last attribute.
        let notLast = STUNMessage(type: 1, transactionID: RFC5769.transactionID,
                                  attributes: [STUNAttribute(type: 0x8028, value: [0, 0, 0, 0]), STUNAttribute(type: 0x8022, value: [0x41])])
        expectSTUN(.badFingerprint, notLast.encoded)
        expectSTUN(.badAddress, nil, address: [0, 3, 0, 1, 1, 2, 3, 4])
        expectSTUN(.badAddress, nil, address: [0, 1, 0, 1, 1, 2, 3])
    }

    private func expectSTUN(_ expected: STUNError, _ bytes: [UInt8]?, address: [UInt8]? = nil,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            if let bytes { _ = try STUNMessage.parse(bytes[...]) }
            if let address { _ = try STUNAddress.decodeXOR(address, transactionID: RFC5769.transactionID) }
            Issue.record("expected \(expected), got success", sourceLocation: sourceLocation)
        } catch {
            #expect(error == expected, sourceLocation: sourceLocation)
        }
    }
}

@Suite("STUN Binding responder")
struct STUNResponderTests {
    let responder = STUNResponder()

    @Test func aBindingRequestGetsTheSourceAddressBackWithAFingerprint() throws {
        let source = PeerAddress.ipv4(192, 0, 2, 1, port: 32853)
        guard case let .answer(bytes) = responder.answer(RFC5769.request[...], from: source) else {
            Issue.record("no answer")
            return
        }
        let m = try STUNMessage.parse(bytes[...])  // its FINGERPRINT verifies
        #expect(m.type == RendezvousConstants.MessageType.bindingSuccess)
        #expect(m.transactionID == RFC5769.transactionID)
        #expect(m.attribute(RendezvousConstants.Attribute.fingerprint) != nil)
        let xor = try #require(m.attribute(RendezvousConstants.Attribute.xorMappedAddress))
        #expect(try STUNAddress.decodeXOR(xor.value, transactionID: m.transactionID) == source)
        // The same XOR-MAPPED-ADDRESS bytes as the RFC's sample response.
        #expect(Array(bytes[20..<32]) == Array(RFC5769.ipv4Response[36..<48]))
    }

    @Test func theSmallestRequestsGetAnswersAtMostThreeTimesTheirSize() throws {
        let bare = STUNMessage(type: RendezvousConstants.MessageType.bindingRequest, transactionID: [UInt8](repeating: 7, count: 12))
        let v6 = try PeerAddress(parsing: "[2001:db8::1]:9")
        for (request, source) in [(bare.encoded, PeerAddress.ipv4(10, 1, 2, 3, port: 4)), (bare.encoded, v6),
                                  (bare.encoded(fingerprint: true), v6), (RFC5769.request, v6)] {
            guard case let .answer(bytes) = responder.answer(request[...], from: source) else {
                Issue.record("no answer to \(request.count) bytes")
                continue
            }
            #expect(bytes.count <= 3 * request.count, "\(bytes.count) bytes for \(request.count)")
            let m = try STUNMessage.parse(bytes[...])
            let xor = try #require(m.attribute(RendezvousConstants.Attribute.xorMappedAddress))
            #expect(try STUNAddress.decodeXOR(xor.value, transactionID: m.transactionID) == source)
        }
    }

    @Test func unknownComprehensionRequiredAttributesGetA420ListingThem() throws {
        var request = STUNMessage(type: RendezvousConstants.MessageType.bindingRequest, transactionID: RFC5769.transactionID)
        request.attributes = [STUNAttribute(type: 0x7777, value: [1, 2, 3, 4]), STUNAttribute(type: 0xC001, value: [5])]
        guard case let .answer(bytes) = responder.answer(request.encoded[...], from: .ipv4(127, 0, 0, 1, port: 1)) else {
            Issue.record("no answer")
            return
        }
        let m = try STUNMessage.parse(bytes[...])
        #expect(m.type == RendezvousConstants.MessageType.bindingError)
        #expect(m.attribute(RendezvousConstants.Attribute.errorCode)?.value.prefix(4) == [0, 0, 4, 20])
        // Only the comprehension-required one is listed; the optional one is ignored.
        #expect(m.attribute(RendezvousConstants.Attribute.unknownAttributes)?.value == [0x77, 0x77])
        #expect(bytes.count <= 3 * request.encoded.count)
    }

    @Test func whatIsNotABindingRequestGetsNoAnswer() {
        let source = PeerAddress.ipv4(127, 0, 0, 1, port: 1)
        // Responses and indications are never answered (no loops between two servers).
        #expect(responder.answer(RFC5769.ipv4Response[...], from: source) != .notSTUN)
        if case .answer = responder.answer(RFC5769.ipv4Response[...], from: source) { Issue.record("answered a response") }
        let indication = STUNMessage(type: RendezvousConstants.MessageType.bindingIndication, transactionID: RFC5769.transactionID)
        if case .answer = responder.answer(indication.encoded[...], from: source) { Issue.record("answered an indication") }
        // An lvbnode session packet (type 1, three zero bytes, an index) is not STUN.
        #expect(responder.answer(([1, 0, 0, 0] + [UInt8](repeating: 0xAB, count: 144))[...], from: source) == .notSTUN)
        var broken = RFC5769.request
        broken[40] ^= 0xFF
        if case .dropped = responder.answer(broken[...], from: source) {} else { Issue.record("answered a broken request") }
    }
}
