import LVBCore
import LVBCrypto
import LVBMedia
import LVBWeb

/// `join REPLAY-ID --web`: the studio page of a node that plays a replay
/// (role "replay": the replay's controls instead of the room's widgets).
extension PlayState {
    func show(on page: StudioServer, node: NodeID) {
        self.page = page
        nodeID = node
    }

    /// What a page gets first: the hello (role "replay"), the replay's info,
    /// where it plays, the status. A live viewer's page keeps its room list
    /// (`rendezvous`), the live room in it (`live_room`) one click away.
    func greeting() -> [String] {
        var hello = JSONLine(event: "hello")
        hello.add("role", "replay")
        hello.add("id", nodeID?.text)
        hello.add("replay", id?.text)
        hello.add("title", player?.manifest.title ?? title)
        hello.add("channels", AudioReceiverConfig().channels)
        hello.add("room", id?.text)
        hello.add("live_room", liveRoom)
        hello.add("rendezvous", liveRoom != nil)
        var lines = [hello.text]
        if let infoLine { lines.append(infoLine) }
        lines.append(stateLine(text: nil, seek: false).text)
        lines.append(JSONLine(event: "status", ("status", pageStatus)).text)
        return lines
    }

    func setPageStatus(_ status: String) {
        guard status != pageStatus else { return }
        pageStatus = status
        page?.broadcast(JSONLine(event: "status", ("status", status)).text)
    }

    /// A command from the page: the replay's controls, as the console's.
    func page(_ command: StudioCommand) {
        switch command {
        case .seek(let ms): seek(to: ms)
        case .pause: pause()
        case .play: play()
        case .speed(let x): setSpeed(x)
        default: wrong("this page plays a replay: it seeks, pauses, plays and changes speed; the room's commands need a live room")
        }
    }
}
