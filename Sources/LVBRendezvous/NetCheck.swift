import LVBCore
import LVBCrypto
import LVBTransport
import NIOPosix

/// Measures this host's NAT against rendezvous (or any STUN server with an
/// alternate port) over two short-lived UDP sockets of its own: one
/// `NATProbe` per server, all at once, judged per address family by
/// `NATClassifier`. `lvbnode netcheck` prints it; a node can run it before
/// it binds its own socket (or drive `NATProbe`s through its transport's
/// side channel: the mapping test on its own socket, the filtering test on
/// a second one).
public enum NetCheck {
    /// What the probes found.
    public struct Result: Sendable {
        /// The mapping test's socket's bound address (its port is the one port preservation is judged by).
        public var local: PeerAddress
        /// One per server, in the order asked.
        public var observations: [NATObservation]
        /// The node's own interface addresses (no NAT when a reflexive address is one of them).
        public var localHosts: Set<PeerAddress.Host>

        /// The judgement for the servers of one family (nil when none was asked).
        public func report(ipv6: Bool) -> NATReport? {
            let asked = observations.filter { $0.server.isIPv4 != ipv6 }
            guard !asked.isEmpty else { return nil }
            return NATClassifier.classify(asked, localPort: local.port, localHosts: localHosts)
        }
    }

    /// Probes every server in `servers` at once; each gives up after
    /// `timeout`. Throws only when no socket can be opened.
    public static func run(_ servers: [PeerAddress], timeout: Duration) async throws(RendezvousQuery.Failure) -> Result {
        let state = NetCheckState()
        let clock = SystemClock.shared
        // Two sockets (`NATProbe`): the mapping test's and the filtering test's, on one loop.
        let any = servers.allSatisfy(\.isIPv4) ? PeerAddress.ipv4(0, 0, 0, 0, port: 0) : PeerAddress.anyDualStack(port: 0)
        let mapping: UDPNode, filtering: UDPNode
        do {
            mapping = try await UDPNode.start(identity: Identity.generate(), listen: any, config: TransportConfig(),
                                              group: MultiThreadedEventLoopGroup.singleton) { _ in }
        } catch {
            throw .bind(error)
        }
        do {
            filtering = try await UDPNode.start(identity: Identity.generate(), listen: any, config: TransportConfig(),
                                                group: mapping.eventLoop) { _ in }
        } catch {
            await mapping.close()
            throw .bind(error)
        }
        let start = clock.now()
        _ = try? await mapping.submit { core in
            state.probes = servers.map { NATProbe(server: $0, deadline: start + timeout) }
            // Every STUN datagram is the probes' (ours or dropped); nothing else is expected here.
            let take: (ArraySlice<UInt8>, PeerAddress) -> SideChannelVerdict = { bytes, source in
                guard STUNMessage.looksLikeSTUN(bytes), let message = try? STUNMessage.parse(bytes) else { return .notMine }
                let now = clock.now()
                for i in state.probes.indices where state.probes[i].consume(message, from: source, now: now) { break }
                return .consumed
            }
            core.sideChannel = take
            filtering.core.sideChannel = take
        }
        while true {
            let done = (try? await mapping.submit { core -> Bool in
                let now = clock.now()
                for i in state.probes.indices {
                    for out in state.probes[i].tick(now: now, random: SodiumRandom.shared) {
                        (out.socket == .mapping ? core : filtering.core).sendRaw(out.bytes, to: out.to)
                    }
                }
                return state.probes.allSatisfy(\.isDone)
            }) ?? true
            if done || clock.now() - start > timeout + .seconds(1) { break }
            try? await Task.sleep(for: .milliseconds(10))
        }
        let observations = (try? await mapping.submit { _ in state.probes.map(\.observation) }) ?? servers.map { NATObservation(server: $0) }
        let local = mapping.localAddress
        await filtering.close()
        await mapping.close()
        return Result(local: local, observations: observations, localHosts: Set(LocalAddresses.interfaceHosts() ?? []))
    }
}

/// The probes, touched on the loop only.
private final class NetCheckState: @unchecked Sendable {
    var probes: [NATProbe] = []
}
