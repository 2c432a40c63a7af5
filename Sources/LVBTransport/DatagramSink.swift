import LVBCore

/// Where a node's outgoing datagrams go: a real UDP socket (`UDPDriver`) or
/// an endpoint on the virtual network in tests.
public protocol DatagramSink: AnyObject {
    func send(_ datagram: [UInt8], to address: PeerAddress)
    /// Sends with an IP hop limit (TTL): hole punching's opener, which makes
    /// this node's own NAT map the flow but dies before the peer's NAT. (A
    /// packet reaching the peer's NAT before the peer's own packet left it can
    /// make that NAT give the peer another port: Linux conntrack does.)
    func send(_ datagram: [UInt8], to address: PeerAddress, hopLimit: Int)
    /// Sends a datagram of exactly `count` bytes that `fill` writes, every
    /// byte of it: the session's packet path, sealed straight into a buffer
    /// the sink owns (the UDP driver's), not into an array copied again.
    func send(count: Int, to address: PeerAddress, fill: (UnsafeMutableRawBufferPointer) -> Void)
    /// Hands what was written so far to the network now instead of at the
    /// end of the read batch (before the node does slow work, e.g. decoding).
    func flush()
    /// Moves to a new socket on a port the system picks (the node moved; see
    /// `AddressChange`), calling `done` on the node's loop with the new port
    /// (nil: it stayed where it was). False when it cannot: a port the user
    /// chose is kept, and so is a virtual endpoint.
    func rebind(_ done: @escaping (UInt16?) -> Void) -> Bool
    /// Opens up to `count` spare IPv4 sockets on ports the system picks
    /// (birthday punching's hard side, `Birthday`): a datagram from R
    /// arriving on spare n reaches `receive` as from
    /// `SparePath.address(spare: n, remote: R)`. `done` gets the numbers
    /// of those that opened, on the node's loop. False: this sink has none.
    func openSpares(count: Int, receive: @escaping (inout [UInt8], PeerAddress) -> Void,
                    _ done: @escaping ([UInt32]) -> Void) -> Bool
    /// The local port of spare socket `spare` (nil: not open, or unknown).
    func sparePort(_ spare: UInt32) -> UInt16?
    /// Sends from spare socket `spare` to `address`, with an IP hop limit when given.
    func sendSpare(_ datagram: [UInt8], spare: UInt32, to address: PeerAddress, hopLimit: Int?)
    func closeSpares(_ spares: [UInt32])
}

extension DatagramSink {
    /// Sinks that send each datagram at once have nothing to flush.
    public func flush() {}

    public func rebind(_ done: @escaping (UInt16?) -> Void) -> Bool { false }

    public func openSpares(count: Int, receive: @escaping (inout [UInt8], PeerAddress) -> Void,
                           _ done: @escaping ([UInt32]) -> Void) -> Bool { false }
    public func sparePort(_ spare: UInt32) -> UInt16? { nil }
    public func sendSpare(_ datagram: [UInt8], spare: UInt32, to address: PeerAddress, hopLimit: Int?) {}
    public func closeSpares(_ spares: [UInt32]) {}

    public func send(_ datagram: [UInt8], to address: PeerAddress, hopLimit: Int) { send(datagram, to: address) }

    public func send(count: Int, to address: PeerAddress, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        var datagram = [UInt8](repeating: 0, count: count)
        datagram.withUnsafeMutableBytes(fill)
        send(datagram, to: address)
    }
}
