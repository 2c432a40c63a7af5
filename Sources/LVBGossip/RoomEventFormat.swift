/// Specification values of the signed room event format (diagrams in
/// RoomEvent.swift and EventBodyCodec.swift). Changing any changes the wire format.
public enum RoomEventFormat {
    static let version: UInt8 = 1
    static let roomIDLength = 16
    public static let authorLength = 32
    static let signatureLength = 64
    /// version ‖ room ‖ author ‖ seq ‖ timestamp ‖ kind ‖ bodyLength
    static let headerLength = 1 + roomIDLength + authorLength + 8 + 8 + 1 + 2
    /// Prefixed (with one 0x00 after it) to the signed bytes, so an event
    /// signature can never be mistaken for a signature of anything else.
    static let signingContext = Array("lvbnode room event v1".utf8)

    /// The largest body of any kind (a 500-byte chat line); it sizes the event.
    public static let maxBodyLength = 500
}
