import LVBCore

/// Where a node's outgoing datagrams go: a real UDP socket (`UDPDriver`) or
/// an endpoint on the virtual network in tests.
public protocol DatagramSink: AnyObject {
    func send(_ datagram: [UInt8], to address: PeerAddress)
}
