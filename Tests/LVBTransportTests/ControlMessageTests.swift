import Testing
@testable import LVBTransport

/// The control channel's messages (lvbnode-protocol(7), CONTROL).
@Suite struct ControlMessageTests {
    @Test func idleSaysWhetherTheSenderStillNeedsTheSession() throws {
        #expect(ControlMessage.idle(released: true).bytes == [5, 1])
        #expect(ControlMessage.idle(released: false).bytes == [5, 0])
        #expect(ControlMessage.bye(ControlMessage.ByeReason.idle).bytes == [4, 3])
        for m in [ControlMessage.idle(released: true), .idle(released: false), .ping(7), .pong(7), .bye(0)] {
            #expect(try ControlMessage.parse(m.bytes[...]) == m)
        }
    }

    @Test func malformedControlMessagesAreRefused() {
        for bytes: [UInt8] in [[], [5], [5, 2], [5, 1, 0], [6, 0], [2, 0]] {
            #expect(throws: TransportError.self) { try ControlMessage.parse(bytes[...]) }
        }
    }
}
