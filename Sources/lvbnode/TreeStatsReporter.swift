import LVBCore
import LVBRoom

/// The `tree` object of `stats` lines and of the exit line: this node's place
/// in the room's media tree and what it sends down it. The rate is over the
/// last interval (the exit line's over the run).
final class TreeStatsReporter {
    private let startedAt = SystemClock.shared.now()
    private var last: (at: Instant, bytes: Int)?

    /// One JSON object, or nil when the node is not in a tree.
    func json(_ node: LiveNode, final: Bool) -> String? {
        guard let tree = node.tree else { return nil }
        let now = SystemClock.shared.now()
        let since = final ? (at: startedAt, bytes: 0) : last ?? (startedAt, 0)
        let bytes = tree.forwardedBytes
        // A new room's relay counts from zero.
        let sent = bytes >= since.bytes ? bytes - since.bytes : bytes
        var o = JSONLine()
        if let parent = tree.parent { o.add("parent", parent.text) } else { o.addRaw("parent", "null") }
        // How the stream comes: straight from the parent, or through a relay (and whose).
        if let parent = tree.parent, parent != node.core.nodeID {
            o.add("parent_path", node.core.path(to: parent))
            o.add("parent_link", node.core.link(to: parent))
            if let address = node.core.endpoint(of: parent) { o.add("parent_address", address.description) }
        }
        if let depth = tree.depth { o.add("depth", depth) } else { o.addRaw("depth", "null") }
        o.add("slots", tree.slots)
        o.add("children", tree.childCount)
        if let backup = tree.backup { o.add("backup", backup.text) } else { o.addRaw("backup", "null") }
        o.add("forwarded_kbps", rounded(Double(sent) * 8 / 1000 / max(0.001, (now - since.at).seconds)))
        o.add("attachments", tree.attachments)
        o.add("failovers", tree.failovers)
        // Children that resumed where they stopped (their parent had died) rather than from the GOP cache.
        o.add("resumes", tree.resumes)
        if !final { last = (now, bytes) }
        return o.text
    }

    /// One line for a person (`/stats`, `/peers`).
    static func describe(_ node: LiveNode) -> String? {
        guard let tree = node.tree else { return nil }
        if tree.isRoot {
            return "media tree: root · \(tree.childCount) of \(tree.slots) direct viewers"
        }
        let place = tree.parent.map { "depth \(tree.depth.map(String.init) ?? "?") below \($0.short)" } ?? "not attached yet"
        return "media tree: \(place) · relaying to \(tree.childCount) of \(tree.slots)"
            + " · backup \(tree.backup?.short ?? "none") · moved \(tree.failovers) times after a silence"
    }
}
