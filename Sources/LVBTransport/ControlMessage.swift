import LVBCore

/// What a node says about itself when a session comes up.
public struct Hello: Sendable, Equatable {
    public var agent: String      // software and version, ≤ 64 bytes
    public var role: Role
    public init(agent: String, role: Role) {
        var cut = Substring(agent)
        while cut.utf8.count > ControlMessage.maxAgentLength { cut = cut.dropLast() }
        self.agent = String(cut)
        self.role = role
    }
    /// The node's part in the room.
    public typealias Role = NodeRole
}

/// Messages on the control channel (man/lvbnode-protocol.7 §CONTROL).
///
///     hello: 1 ‖ role(1) ‖ len(1) ‖ agent(len ≤ 64)
///     ping:  2 ‖ nonce(8)
///     pong:  3 ‖ nonce(8)
///     bye:   4 ‖ reason(1)
///     idle:  5 ‖ released(1)   (1: the sender no longer needs the session; 0: it does again)
public enum ControlMessage: Equatable {
    /// Reasons carried by `bye`.
    public enum ByeReason {
        public static let leaving: UInt8 = 0
        /// Sent to the old address when the same identity opens a new session
        /// from another one: "you have been replaced".
        public static let replaced: UInt8 = 2
        /// Neither side needs the session any more (`TransportCore.collectSessions`).
        public static let idle: UInt8 = 3
    }

    case hello(Hello)
    case ping(UInt64)
    case pong(UInt64)
    case bye(UInt8)
    /// Whether the sender still needs the session (`TransportCore.collectSessions`).
    case idle(released: Bool)

    public static let maxAgentLength = 64

    public static func parse(_ bytes: ArraySlice<UInt8>) throws(TransportError) -> ControlMessage {
        var r = ByteReader(bytes)
        do {
            let kind = try r.readUInt8()
            let message: ControlMessage
            switch kind {
            case 1:
                guard let role = Hello.Role(rawValue: try r.readUInt8()) else { throw TransportError.malformed("unknown role") }
                let agent = try r.readShortBytes()
                guard agent.count <= maxAgentLength, let text = String(validating: agent, as: UTF8.self) else {
                    throw TransportError.malformed("bad agent string")
                }
                message = .hello(Hello(agent: text, role: role))
            case 2: message = .ping(try r.readUInt64())
            case 3: message = .pong(try r.readUInt64())
            case 4: message = .bye(try r.readUInt8())
            case 5:
                let flag = try r.readUInt8()
                guard flag <= 1 else { throw TransportError.malformed("idle flag \(flag)") }
                message = .idle(released: flag == 1)
            default: throw TransportError.malformed("unknown control message \(kind)")
            }
            try r.expectEnd()
            return message
        } catch let e as TransportError {
            throw e
        } catch {
            throw .malformed("control message: \(error)")
        }
    }

    public var bytes: [UInt8] {
        var w = ByteWriter(capacity: 16)
        switch self {
        case let .hello(h):
            w.write(UInt8(1))
            w.write(h.role.rawValue)
            w.writeShortBytes(Array(h.agent.utf8))
        case let .ping(n): w.write(UInt8(2)); w.write(n)
        case let .pong(n): w.write(UInt8(3)); w.write(n)
        case let .bye(r): w.write(UInt8(4)); w.write(r)
        case let .idle(released): w.write(UInt8(5)); w.write(UInt8(released ? 1 : 0))
        }
        return w.bytes
    }
}
