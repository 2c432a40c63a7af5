import LVBWeb
import NIOCore

/// `lvbnode mesh --web`: the page of the whole mesh (the trees drawn, the
/// events, the lines, the summary), served with the studio's server and
/// its access rules. The page gets the mesh's JSON lines; a page that
/// opens late first gets the latest figures and the recent lines.
public final class MeshWeb: @unchecked Sendable {
    public let server: StudioServer
    private var nodes: String?
    private var links: String?
    private var summary: String?
    private var recent: [String] = []

    /// Recent event and chat lines a new page gets.
    public static let backlog = 100

    public init(loop: EventLoop, token: String, host: String, port: Int) {
        server = StudioServer(loop: loop, token: token, host: host, port: port, home: "mesh.html")
        server.onConnect = { [unowned self] in [nodes, links].compactMap { $0 } + recent + [summary].compactMap { $0 } }
        // The mesh page sends no commands; anything it might is ignored.
        server.onCommand = { _ in }
    }

    public func start() -> EventLoopFuture<Void> { server.start() }
    public func close() -> EventLoopFuture<Void> { server.close() }
    public var url: String { server.url }

    /// On the loop: one of the mesh's JSON lines.
    public func send(_ line: String, kind: Kind) {
        switch kind {
        case .nodes: nodes = line
        case .links: links = line
        case .summary: summary = line
        case .recent:
            recent.append(line)
            if recent.count > Self.backlog { recent.removeFirst(recent.count - Self.backlog) }
        }
        server.broadcast(line)
    }

    public enum Kind { case nodes, links, summary, recent }
}
