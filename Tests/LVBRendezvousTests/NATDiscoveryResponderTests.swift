import LVBCore
import Testing
@testable import LVBRendezvous

/// The rendezvous's RFC 5780 half: OTHER-ADDRESS, CHANGE-REQUEST with one IP, the 3× bound.
@Suite("STUN responder with an alternate port (RFC 5780)")
struct NATDiscoveryResponderTests {
    static let primary = PeerAddress.ipv4(198, 51, 100, 1, port: 3478)
    let responder = STUNResponder(primary: Self.primary, alternatePort: 3479)
    let source = PeerAddress.ipv4(203, 0, 113, 5, port: 40000)
    let id = [UInt8](repeating: 9, count: 12)

    func request(flags: UInt8? = nil, fingerprint: Bool = true) -> [UInt8] {
        var m = STUNMessage(type: RendezvousConstants.MessageType.bindingRequest, transactionID: id)
        if let flags { m.attributes.append(STUNAttribute(type: RendezvousConstants.Attribute.changeRequest, value: [0, 0, 0, flags])) }
        return m.encoded(fingerprint: fingerprint)
    }

    func other(_ bytes: [UInt8]) throws -> PeerAddress? {
        try STUNMessage.parse(bytes[...]).attribute(RendezvousConstants.Attribute.otherAddress).map { try STUNAddress.decode($0.value) }
    }

    @Test func answersFromEitherPortNameTheOtherPort() throws {
        guard case let .answer(a) = responder.answer(request()[...], from: source, on: .primary),
              case let .answer(b) = responder.answer(request()[...], from: source, on: .alternate) else {
            Issue.record("no answer")
            return
        }
        #expect(try other(a) == .ipv4(198, 51, 100, 1, port: 3479))
        #expect(try other(b) == .ipv4(198, 51, 100, 1, port: 3478))
        let xor = try #require(try STUNMessage.parse(b[...]).attribute(RendezvousConstants.Attribute.xorMappedAddress))
        #expect(try STUNAddress.decodeXOR(xor.value, transactionID: id) == source)
    }

    @Test func aWildcardRendezvousNamesTheUnspecifiedAddressOfTheSourcesFamily() throws {
        let wild = STUNResponder(primary: .anyDualStack(port: 7600), alternatePort: 7601)
        let v6 = try PeerAddress(parsing: "[2001:db8:1::2]:5000")
        guard case let .answer(a) = wild.answer(request()[...], from: source), case let .answer(b) = wild.answer(request()[...], from: v6) else {
            Issue.record("no answer")
            return
        }
        #expect(try other(a) == .ipv4(0, 0, 0, 0, port: 7601))
        #expect(try other(b) == .anyDualStack(port: 7601))
    }

    @Test func changePortIsAnsweredFromTheOtherPort() throws {
        guard case let .answerFromOtherPort(bytes) = responder.answer(request(flags: RendezvousConstants.changePortFlag)[...], from: source) else {
            Issue.record("not answered from the other port")
            return
        }
        let m = try STUNMessage.parse(bytes[...])
        #expect(m.type == RendezvousConstants.MessageType.bindingSuccess)
        #expect(try other(bytes) == .ipv4(198, 51, 100, 1, port: 3479))
        // Flags 0: an ordinary answer from the port asked.
        if case .answer = responder.answer(request(flags: 0)[...], from: source) {} else { Issue.record("flags 0 not answered in place") }
        // Asked on the alternate port, the answer goes out from the primary (the caller sends it there).
        if case .answerFromOtherPort = responder.answer(request(flags: RendezvousConstants.changePortFlag)[...], from: source, on: .alternate) {} else {
            Issue.record("alternate's change-port not answered from the other port")
        }
    }

    @Test func changeIPOrNoAlternatePortGetsA420NamingChangeRequest() throws {
        let cases: [(STUNResponder, UInt8)] = [
            (responder, RendezvousConstants.changeIPFlag),
            (responder, RendezvousConstants.changeIPFlag | RendezvousConstants.changePortFlag),
            (STUNResponder(), RendezvousConstants.changePortFlag),
        ]
        for (r, flags) in cases {
            guard case let .answer(bytes) = r.answer(request(flags: flags)[...], from: source) else {
                Issue.record("flags \(flags): no answer in place")
                continue
            }
            let m = try STUNMessage.parse(bytes[...])
            #expect(m.type == RendezvousConstants.MessageType.bindingError)
            #expect(m.attribute(RendezvousConstants.Attribute.errorCode)?.value.prefix(4) == [0, 0, 4, 20])
            #expect(m.attribute(RendezvousConstants.Attribute.unknownAttributes)?.value == [0x00, 0x03])
        }
    }

    @Test func aChangeRequestOfTheWrongLengthIsDropped() {
        var m = STUNMessage(type: RendezvousConstants.MessageType.bindingRequest, transactionID: id)
        m.attributes = [STUNAttribute(type: RendezvousConstants.Attribute.changeRequest, value: [0, 0, 0, 2, 0, 0, 0, 0])]
        if case .dropped = responder.answer(m.encoded[...], from: source) {} else { Issue.record("answered a malformed CHANGE-REQUEST") }
    }

    @Test func everyAnswerIsAtMostThreeTimesItsRequest() throws {
        let v6 = try PeerAddress(parsing: "[2001:db8::1]:9")
        let wild = STUNResponder(primary: .anyDualStack(port: 7600), alternatePort: 7601)
        let requests = [request(fingerprint: false), request(), request(flags: RendezvousConstants.changePortFlag, fingerprint: false),
                        request(flags: RendezvousConstants.changePortFlag), request(flags: RendezvousConstants.changeIPFlag, fingerprint: false)]
        for r in [responder, wild] {
            for bytes in requests {
                for from in [source, v6] where r.primary?.isIPv4 != true || from.isIPv4 {
                    for port in [STUNPort.primary, .alternate] {
                        let answer: [UInt8]
                        switch r.answer(bytes[...], from: from, on: port) {
                        case .answer(let a), .answerFromOtherPort(let a): answer = a
                        default:
                            Issue.record("no answer to \(bytes.count) bytes from \(from)")
                            continue
                        }
                        #expect(answer.count <= 3 * bytes.count, "\(answer.count) bytes for \(bytes.count)")
                        #expect((try? STUNMessage.parse(answer[...])) != nil)
                    }
                }
            }
        }
        // A bare 20-byte request from IPv6: XOR-MAPPED-ADDRESS fits, OTHER-ADDRESS is left out.
        guard case let .answer(bare) = wild.answer(request(fingerprint: false)[...], from: v6) else { return }
        #expect(try other(bare) == nil)
        #expect(bare.count <= 60)
    }
}
