import LVBCore
import LVBTransport

/// One node's socket on a `VirtualNetwork`: what the node's engine sends
/// through and receives from in scenario tests.
public final class VirtualEndpoint: DatagramSink {
    public let address: PeerAddress
    /// Called for each datagram delivered to this endpoint, during `run`.
    public var onReceive: ((_ datagram: [UInt8], _ from: PeerAddress) -> Void)?
    public private(set) var isClosed = false
    private weak var network: VirtualNetwork?

    init(address: PeerAddress, network: VirtualNetwork) {
        self.address = address
        self.network = network
    }

    /// Hands a datagram to the network; it arrives (or not) during a later `run`.
    public func send(_ datagram: [UInt8], to address: PeerAddress) {
        guard !isClosed else { return }
        network?.transmit(datagram, from: self.address, to: address)
    }

    /// A hop-limited datagram leaves through this endpoint's NAT (mapping the
    /// flow) and dies before the next one: the model of "a few hops".
    public func send(_ datagram: [UInt8], to address: PeerAddress, hopLimit: Int) {
        guard !isClosed else { return }
        network?.transmit(datagram, from: self.address, to: address, diesAfterOwnNAT: true)
    }

    /// Stops receiving and sending; datagrams to this address are dropped.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        onReceive = nil
        network?.remove(self)
    }

    func deliver(_ datagram: [UInt8], from: PeerAddress) {
        onReceive?(datagram, from)
    }
}
