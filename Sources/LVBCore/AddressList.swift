public extension Array where Element == PeerAddress {
    /// The addresses in order, each once, at most `limit` (what an
    /// announcement or an introduction carries).
    func uniqued(limit: Int) -> [PeerAddress] {
        var seen: Set<PeerAddress> = []
        return Array(filter { seen.insert($0).inserted }.prefix(limit))
    }
}
