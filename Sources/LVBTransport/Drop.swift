import LVBCore

extension TransportCore {
    /// Counts a datagram dropped from the network and, at debug level, logs
    /// why: lvbnode(1) promises one debug line per drop with its reason. The
    /// reason is an autoclosure, so a flood costs no formatting unless
    /// someone asked for debug.
    func drop(_ counter: WritableKeyPath<TransportStats, Int>, from source: PeerAddress,
              _ reason: @autoclosure () -> String) {
        stats[keyPath: counter] += 1
        log.debug("dropped datagram from \(source): \(reason())")
    }
}
