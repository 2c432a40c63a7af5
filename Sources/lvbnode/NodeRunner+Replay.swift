import LVBCore
import LVBCrypto
import LVBMedia
import LVBRendezvous
import LVBReplay
import LVBRoom
import LVBTransport

extension NodeRunner {
    /// A host's replay recorder, its directory checked before the room
    /// starts; nil when the node keeps no replay (a viewer, no media,
    /// `--no-replay`, `--ephemeral`).
    func replayRecorder(identity: Identity) throws -> ReplayRecorder? {
        guard let replay, case let .host(room, _, access, info) = setup, let publish, !publish.isEmpty else { return nil }
        // A private room's replay (a password, invites) is kept for its host alone: never served nor listed.
        return try ReplayRecorder(library: ReplayLibrary(root: replay.directory), budget: replay.budget, identity: identity,
                                  room: room, title: info.title ?? "", video: publish.video == nil ? nil : (publish.width, publish.height),
                                  audioChannels: publish.audio == nil ? 0 : 1, isPrivate: access != 0)
    }

    /// Keeps what the host publishes (on the node's loop) and says what the recorder did.
    func keep(_ node: LiveNode, in recorder: ReplayRecorder, out: Output) {
        // The replay's thumbnail in the list: the live's latest, as the room's announcer signed it.
        let announcer = node.role(RoomAnnouncer.self)
        let keepThumbnail: (RoomThumbnail?) -> Void = { [weak recorder] t in
            if let t, let recorder, let id = recorder.id { try? recorder.library.storeThumbnail(id, seq: t.seq, blob: t.blob) }
        }
        announcer?.onThumbnail = { keepThumbnail($0) }
        recorder.onEvent = { event in
            switch event {
            case let .started(id, directory):
                // One signed before the recording started.
                keepThumbnail(announcer?.thumbnail)
                var l = JSONLine(event: "replay")
                l.add("id", id.text)
                l.add("path", directory)
                out.emit(l, human: "keeping a replay of this live: \(id.text) in \(directory)", kind: "replay")
            case let .evicted(id):
                var l = JSONLine(event: "replay_deleted")
                l.add("id", id.text)
                out.emit(l, human: "deleted the oldest replay \(id.text) to keep within --replay-budget", kind: "replay")
            case let .stopped(why):
                var l = JSONLine(event: "warning")
                l.add("message", why)
                out.emit(l, human: why, kind: "warning")
            }
        }
        node.register(ReplayHolder(library: recorder.library, core: node.core, clock: SystemClock.shared,
                                   addresses: node.plan.addresses))
        node.publishing.tap(video: { frame in
            guard let vp8 = frame.vp8Frame else { return }
            recorder.video(vp8.data, keyframe: frame.isKeyframe, captureMicros: vp8.captureMicros)
        }, audio: { packet in
            recorder.audio(Array(packet.payload), captureMicros: NTPTime.unixMicros(packet.captureTime))
        })
    }
}

/// A node's replays served to the players that ask (replay channel) and
/// told to every rendezvous it holds a session with.
final class ReplayHolder: LiveRole {
    let holding: ReplayHolding

    init(library: ReplayLibrary, core: TransportCore, clock: Clock, addresses: [PeerAddress]) {
        holding = ReplayHolding(library: library, core: core, clock: clock, addresses: addresses)
        holding.sendsThumbnails(maxPayload: core.maxPayload)
    }

    func handle(_ event: NodeEvent) {
        if case let .transport(t) = event { holding.handle(t) }
    }

    func tick() { holding.tick() }
}

extension ReplayHolding {
    /// A held replay's thumbnail, when the library keeps one (its host's
    /// live thumbnail, signed by the host), follows its card to each
    /// rendezvous in the rendezvous's own thumbnail messages.
    func sendsThumbnails(maxPayload: Int) {
        let library = server.library
        announcer.extras = { card in
            guard let (seq, blob) = library.thumbnail(card.id),
                  let t = try? RoomThumbnail(room: card.info.room, seq: seq, blob: blob),
                  t.verify(host: card.info.host),
                  let pieces = t.pieces(maxPiece: maxPayload - RoomAnnouncer.thumbnailHeader) else { return [] }
            return pieces.map { (.rendezvous, RendezvousMessage.thumbnail(room: t.room, seq: t.seq, piece: $0).encoded) }
        }
    }
}
