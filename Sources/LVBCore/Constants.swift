/// Project-wide values.
public enum CoreConstants {
    /// The software version shown by `--version` and in hello messages.
    public static let version = "0.1.0"
    /// Largest UDP datagram any node sends (fits every path MTU without IP
    /// fragmentation; QUIC makes the same choice).
    public static let maxDatagram = 1200
}
