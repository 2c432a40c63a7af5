import LVBCore
import LVBRendezvous

/// `lvbnode netcheck`'s report, as text (one fact a line) or one JSON object.
enum NetcheckOutput {
    static func text(_ r: NetCheck.Result, v4: NATReport?, v6: NATReport?, global6: [String]) -> String {
        var s = "netcheck report (from \(r.local)):\n"
        if let v4 {
            s += "  * IPv4 UDP: \(v4.reachable ? "yes" : "no answer")\n"
            if v4.reachable {
                s += "  * IPv4 reflexive address: \(v4.reflexive.map(\.description).joined(separator: ", "))\n"
                s += facts(v4)
            }
        } else {
            s += "  * IPv4: not measured (no IPv4 rendezvous given)\n"
        }
        s += "  * IPv6 global addresses: \(global6.isEmpty ? "none" : global6.joined(separator: ", "))\n"
        if let v6 {
            s += "  * IPv6 UDP: \(v6.reachable ? "yes" : "no answer")\n"
            if v6.reachable {
                s += "  * IPv6 reflexive address: \(v6.reflexive.map(\.description).joined(separator: ", "))\n"
                s += facts(v6, family: "IPv6 ")
            }
        } else {
            s += "  * IPv6 UDP: not measured (no IPv6 rendezvous given)\n"
        }
        let trips = r.observations.map { o in "\(o.server) " + (o.rtt.map(ms) ?? "no answer") }
        s += "  * round trip: \(trips.joined(separator: ", "))\n"
        return s
    }

    private static func facts(_ r: NATReport, family: String = "") -> String {
        "  * \(family)mapping: \(r.mapping.rawValue)\n"
            + "  * \(family)port-preserving: \(r.portPreserving.map { $0 ? "yes" : "no" } ?? "unknown")\n"
            + "  * \(family)filtering: \(r.filtering.rawValue)\n"
            + "  * \(family)hard NAT: \(r.isHard ? "yes" : "no")\n"
    }

    static func json(_ r: NetCheck.Result, v4: NATReport?, v6: NATReport?, global6: [String]) -> JSONLine {
        var l = JSONLine(event: "netcheck")
        l.add("local", r.local.description)
        l.add("udp", (v4?.reachable ?? false) || (v6?.reachable ?? false))
        if let v4 { add(v4, prefix: "ipv4", to: &l) }
        l.addRaw("ipv6_global", "[" + global6.map(JSONLine.quote).joined(separator: ",") + "]")
        if let v6 { add(v6, prefix: "ipv6", to: &l) }
        var trips = JSONLine()
        for o in r.observations {
            if let rtt = o.rtt { trips.add(o.server.description, Double(rtt.nanosecondsClamped) / 1e6) } else { trips.addRaw(o.server.description, "null") }
        }
        l.addRaw("rtt_ms", trips.text)
        return l
    }

    private static func add(_ r: NATReport, prefix: String, to l: inout JSONLine) {
        l.add(prefix, r.reachable)
        l.addRaw("\(prefix)_reflexive", "[" + r.reflexive.map { JSONLine.quote($0.description) }.joined(separator: ",") + "]")
        l.add("\(prefix)_mapping", r.mapping.rawValue)
        if let p = r.portPreserving { l.add("\(prefix)_port_preserving", p) }
        l.add("\(prefix)_filtering", r.filtering.rawValue)
        l.add("\(prefix)_hard_nat", r.isHard)
    }

    private static func ms(_ d: Duration) -> String {
        let v = Double(d.nanosecondsClamped) / 1e6
        return v < 10 ? "\(Double(Int(v * 10)) / 10) ms" : "\(Int(v.rounded())) ms"
    }
}
