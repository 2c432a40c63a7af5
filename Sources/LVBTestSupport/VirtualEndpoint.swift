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
        closeSpares(Array(spares.keys))
    }

    // MARK: Spare sockets (birthday punching)

    /// Spare endpoints at this endpoint's IPv4 address, other ports, by number.
    public private(set) var spares: [UInt32: VirtualEndpoint] = [:]
    private var nextSpare: UInt32 = 0

    public func openSpares(count: Int, receive: @escaping (inout [UInt8], PeerAddress) -> Void,
                           _ done: @escaping ([UInt32]) -> Void) -> Bool {
        guard let network, !isClosed, address.isIPv4 else { return false }
        var opened = [UInt32]()
        var port = address.port
        for _ in 0..<count {
            // The next free port above this endpoint's own (wrapping past 65535 to 1024).
            var tries = 0
            repeat {
                port = port == .max ? 1024 : port + 1
                tries += 1
            } while network.hasEndpoint(at: PeerAddress(host: address.host, port: port)) && tries < 65536
            nextSpare += 1
            let number = nextSpare
            let spare = network.makeEndpoint(address: PeerAddress(host: address.host, port: port))
            spare.onReceive = { datagram, from in
                guard let path = SparePath.address(spare: number, remote: from) else { return }
                var bytes = datagram
                receive(&bytes, path)
            }
            spares[number] = spare
            opened.append(number)
        }
        done(opened)
        return true
    }

    public func sparePort(_ spare: UInt32) -> UInt16? { spares[spare]?.address.port }

    public func sendSpare(_ datagram: [UInt8], spare: UInt32, to address: PeerAddress, hopLimit: Int?) {
        guard let endpoint = spares[spare] else { return }
        if let hopLimit { endpoint.send(datagram, to: address, hopLimit: hopLimit) } else { endpoint.send(datagram, to: address) }
    }

    public func closeSpares(_ numbers: [UInt32]) {
        for number in numbers { spares.removeValue(forKey: number)?.close() }
    }

    func deliver(_ datagram: [UInt8], from: PeerAddress) {
        onReceive?(datagram, from)
    }
}
