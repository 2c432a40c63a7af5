import LVBCore
import LVBCrypto
import LVBMedia
import LVBTransport

/// The host's stream as this viewer watches it, as a role of its node: it
/// subscribes (through the media router) with each admission request — the
/// host's GOP follows its pass — and once more when admitted if nothing came
/// yet, and hands what the receive pipeline decodes to the node's sinks
/// (files, pipes, RTP out) and to the taps of a UI or a test.
public final class HostStreamViewer: LiveRole {
    /// Where the received stream goes (nil: this node takes no media).
    public let sinks: MediaSinks?
    /// Taps on the host's stream as it leaves the receive pipeline (after the
    /// sinks): decoded pictures and sound, for a UI or a test.
    public var onHostVideo: ((ReceivedVideoFrame) -> Void)?
    public var onHostAudio: ((ReceivedAudioFrame) -> Void)?
    /// The sinks' tap on the host's stream (`--rtp-out`), taken anew with a new host.
    private var tap: StreamTaps<NodeID>.Tap?

    private unowned let node: LiveNode

    init(node: LiveNode, sinks: MediaSinks?) {
        self.node = node
        self.sinks = sinks
        sinks?.onEvent = { [unowned node] event in node.report(.sink(event)) }
    }

    public func handle(_ event: NodeEvent) {
        switch event {
        case .admissionRequested, .room(.admitted): receiveHostStream()
        default: break
        }
    }

    /// Subscribes to the host's stream, or asks again if none of it came yet.
    private func receiveHostStream() {
        let room = node.room, media = node.media
        guard let sinks, room.host != node.core.nodeID else { return }
        if media.receivers[room.host] != nil { return media.subscribeAgainIfSilent(to: room.host) }
        guard let receiver = try? media.receive(from: room.host) else { return }
        receiver.onVideo = { [unowned self] in
            sinks.video($0)
            onHostVideo?($0)
        }
        receiver.onAudio = { [unowned self] in
            sinks.audio($0)
            onHostAudio?($0)
        }
        tap = media.taps.retarget(tap, to: room.host) { sinks.packet($0) }
        receiver.onReceived = { [unowned node] in node.onWakeupChanged?() }
    }

    /// Finishes the output files; after the loop is done with the sinks.
    func closeOutputs() { sinks?.close() }
}
