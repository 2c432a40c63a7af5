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
}

extension DatagramSink {
    public func send(_ datagram: [UInt8], to address: PeerAddress, hopLimit: Int) { send(datagram, to: address) }
}
