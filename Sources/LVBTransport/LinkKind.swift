import LVBCore
import LVBCrypto

extension TransportCore {
    /// How the session with `id` runs, for people and scripts: "direct",
    /// "relay via ID" (through that node), "relay" (through a relay not
    /// known here), or "none".
    public func path(to id: NodeID) -> String {
        guard let p = peersByID[id] else { return "none" }
        guard RelayPath.isRelay(p.endpoint) else { return "direct" }
        return relay(of: id).map { "relay via \($0.text)" } ?? "relay"
    }

    /// The kind of link the session with `id` is (issue 48): "direct IPv4",
    /// "direct IPv6", "birthday IPv4" (direct, found by birthday punching),
    /// "rendezvous relay via ID" (a rendezvous passes its
    /// datagrams), "member relay via ID" (a member of the room does),
    /// "relay" (through a relay not known here) or "none".
    public func link(to id: NodeID) -> String {
        guard let p = peersByID[id] else { return "none" }
        guard RelayPath.isRelay(p.endpoint) else {
            if p.birthdayPath == p.endpoint { return "birthday IPv4" }
            return SparePath.outside(p.endpoint).isIPv4 ? "direct IPv4" : "direct IPv6"
        }
        guard let via = relay(of: id) else { return "relay" }
        return "\(isRendezvous(via) ? "rendezvous" : "member") relay via \(via.text)"
    }
}
