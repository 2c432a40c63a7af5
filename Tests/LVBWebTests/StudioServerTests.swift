import LVBCore
#if canImport(Glibc)
import Glibc
#endif
import LVBWeb
import NIOCore
import NIOPosix
import Testing

/// A blocking TCP client for the tests: what a browser sends, byte for byte.
private final class RawClient {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard r == 0 else { throw ClientError.connect }
    }

    deinit { close(fd) }

    enum ClientError: Error { case connect, closed }

    func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) } }
    func send(_ text: String) { send(Array(text.utf8)) }

    func read(_ count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count {
            var buf = [UInt8](repeating: 0, count: count - out.count)
            let n = recv(fd, &buf, buf.count, 0)
            guard n > 0 else { throw ClientError.closed }
            out += buf[..<n]
        }
        return out
    }

    /// The response head (up to the blank line), as text.
    func readHead() throws -> String {
        var out: [UInt8] = []
        while !out.suffix(4).elementsEqual([13, 10, 13, 10]) { out += try read(1) }
        return String(decoding: out, as: UTF8.self)
    }

    func get(_ uri: String, host: String, extra: String = "") throws -> (status: Int, head: String, body: String) {
        send("GET \(uri) HTTP/1.1\r\nHost: \(host)\r\n\(extra)Connection: close\r\n\r\n")
        let head = try readHead()
        let status = Int(head.split(separator: " ")[1]) ?? 0
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: " ")) } ?? 0
        return (status, head, String(decoding: try read(length), as: UTF8.self))
    }

    /// One server frame (unmasked): opcode and payload.
    func readFrame() throws -> (opcode: UInt8, payload: [UInt8]) {
        let h = try read(2)
        var length = Int(h[1] & 0x7F)
        if length == 126 { length = try read(2).reduce(0) { $0 << 8 | Int($1) } }
        if length == 127 { length = try read(8).reduce(0) { $0 << 8 | Int($1) } }
        return (h[0] & 0x0F, try read(length))
    }

    /// A masked client text frame.
    func sendText(_ text: String) { sendFrame(opcode: 1, Array(text.utf8)) }

    /// A masked client binary frame (a page's camera).
    func sendBinary(_ payload: [UInt8]) { sendFrame(opcode: 2, payload) }

    func sendFrame(opcode: UInt8, _ payload: [UInt8]) {
        let mask: [UInt8] = [1, 2, 3, 4]
        var frame: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65536 {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
        }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        send(frame)
    }
}

private extension Substring {
    func trimmingCharacters(in set: Character) -> String { String(drop { $0 == set }.reversed().drop { $0 == set }.reversed()) }
}

private func upgrade(token: String?, origin: String?, host: String) -> String {
    var r = "GET /ws\(token.map { "?token=\($0)" } ?? "") HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    r += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    if let origin { r += "Origin: \(origin)\r\n" }
    return r + "\r\n"
}

@Suite(.serialized) struct StudioServerTests {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    func withServer(_ body: (StudioServer, String) throws -> Void) throws {
        let server = StudioServer(loop: group.next(), token: "tok3n", host: "127.0.0.1", port: 0)
        try server.start().wait()
        defer { try? server.close().wait() }
        try body(server, "127.0.0.1:\(server.port)")
    }

    @Test func thePageNeedsTheTokenAndItsOwnHostAndCarriesTheCSP() throws {
        try withServer { server, host in
            let page = try RawClient(port: server.port).get("/?token=tok3n", host: host)
            #expect(page.status == 200)
            #expect(page.head.contains("Content-Security-Policy: default-src 'none'; script-src 'self'"))
            #expect(page.head.contains("Set-Cookie: lvbnode_token_\(server.port)=tok3n; Path=/; HttpOnly; SameSite=Strict"))
            #expect(page.body.contains("<html"))
            #expect(try RawClient(port: server.port).get("/", host: host).status == 403)
            #expect(try RawClient(port: server.port).get("/?token=wrong", host: host).status == 403)
            #expect(try RawClient(port: server.port).get("/?token=tok3n", host: "evil.example:\(server.port)").status == 403)
            // The page's own files load with the cookie alone.
            #expect(try RawClient(port: server.port).get("/index.html", host: host, extra: "Cookie: lvbnode_token_\(server.port)=tok3n\r\n").status == 200)
            #expect(try RawClient(port: server.port).get("/nope.js", host: host, extra: "Cookie: lvbnode_token_\(server.port)=tok3n\r\n").status == 404)
            #expect(try RawClient(port: server.port).get("/../etc/passwd?token=tok3n", host: host).status == 404)
        }
    }

    @Test func aListedRoomsThumbnailIsServedAsAJPEGWithTheSameChecks() throws {
        try withServer { server, host in
            let room = "d73narko5yoa6krgk5myvpf5ye"
            let jpeg: [UInt8] = [0xFF, 0xD8, 0x41, 0x42, 0xFF, 0xD9]
            try server.loop.submit { server.thumbnail = { $0 == room ? jpeg : nil } }.wait()
            let got = try RawClient(port: server.port).get("/thumbs/\(room).jpg?token=tok3n", host: host)
            #expect(got.status == 200)
            #expect(got.head.contains("Content-Length: 6") && got.head.contains("Content-Type: image/jpeg") && got.head.contains("Content-Security-Policy: default-src 'none'"))
            #expect(Array(got.body.utf8) == Array(String(decoding: jpeg, as: UTF8.self).utf8))
            // Loaded by the page's <img> with the cookie alone.
            #expect(try RawClient(port: server.port).get("/thumbs/\(room).jpg", host: host, extra: "Cookie: lvbnode_token_\(server.port)=tok3n\r\n").status == 200)
            #expect(try RawClient(port: server.port).get("/thumbs/\(room).jpg", host: host).status == 403)
            #expect(try RawClient(port: server.port).get("/thumbs/\(room).jpg?token=tok3n", host: "evil.example:\(server.port)").status == 403)
            // No thumbnail, or not a room id: 404.
            #expect(try RawClient(port: server.port).get("/thumbs/aaaaaaaaaaaaaaaaaaaaaaaaaa.jpg?token=tok3n", host: host).status == 404)
            #expect(try RawClient(port: server.port).get("/thumbs/../index.html.jpg?token=tok3n", host: host).status == 404)
        }
    }

    @Test func theSocketNeedsTokenAndOriginThenCarriesEventsMediaAndCommands() throws {
        try withServer { server, host in
            var commands: [StudioCommand] = []
            server.onConnect = { [#"{"event":"hello","role":"viewer"}"#] }
            server.onCommand = { commands.append($0) }
            server.roomCommands = ["chat": { fields throws(CommandFieldError) in _ = try fields.text("text") }]
            let origin = "http://\(host)"
            for (token, o) in [(nil, origin), ("wrong", origin), ("tok3n", "http://evil.example"), ("tok3n", nil)] as [(String?, String?)] {
                let c = try RawClient(port: server.port)
                c.send(upgrade(token: token, origin: o, host: host))
                let head = try c.readHead()
                #expect(head.hasPrefix("HTTP/1.1 403"), "\(String(describing: token)) \(String(describing: o)): \(head)")
            }
            #expect(server.stats.refused == 4)
            let c = try RawClient(port: server.port)
            c.send(upgrade(token: "tok3n", origin: origin, host: host))
            #expect(try c.readHead().hasPrefix("HTTP/1.1 101"))
            let hello = try c.readFrame()
            #expect(hello.opcode == 1 && String(decoding: hello.payload, as: UTF8.self) == #"{"event":"hello","role":"viewer"}"#)
            // Video starts at a keyframe.
            server.broadcast(StudioMediaFrame(kind: .video, isKeyframe: false, captureMicros: 1, rtpTimestamp: 1, payload: [7]))
            server.broadcast(StudioMediaFrame(kind: .video, isKeyframe: true, captureMicros: 2, rtpTimestamp: 2, payload: [8, 9]))
            server.broadcast(#"{"event":"chat","text":"hi"}"#)
            let media = try c.readFrame()
            #expect(media.opcode == 2 && media.payload == StudioMediaFrame(kind: .video, isKeyframe: true, captureMicros: 2, rtpTimestamp: 2, payload: [8, 9]).serialized)
            #expect(try c.readFrame().opcode == 1)
            c.sendText(#"{"cmd":"chat","text":"from the page"}"#)
            c.sendText("not json")
            let error = try c.readFrame()
            #expect(String(decoding: error.payload, as: UTF8.self) == #"{"event":"error","message":"not a JSON object"}"#)
            // A room command's own check runs at the server: what it throws is the page's error.
            c.sendText(#"{"cmd":"chat"}"#)
            let missing = try c.readFrame()
            #expect(String(decoding: missing.payload, as: UTF8.self) == #"{"event":"error","message":"missing field \"text\""}"#)
            #expect(try server.loop.submit { commands }.wait() == [.room("chat", .object(["cmd": .string("chat"), "text": .string("from the page")]))])
            #expect(try server.loop.submit { server.stats }.wait().malformed == 2)
        }
    }

    @Test func aPagesCameraFramesAreTakenOnlyWhileTheNodeWantsThemAndBadOnesLeaveTheSocketOpen() throws {
        try withServer { server, host in
            var taken: [StudioMediaFrame] = []
            var onStage = false
            var closed = 0
            var commands: [StudioCommand] = []
            server.onPageMedia = { frame, _ in
                guard onStage else { return "not on stage" }
                taken.append(frame)
                return nil
            }
            server.onCamera = { on, page in server.send(#"{"event":"stage_camera","on":\#(on)}"#, to: page) }
            server.onCommand = { commands.append($0) }
            server.onClosed = { _ in closed += 1 }
            let client = try RawClient(port: server.port)
            client.send(upgrade(token: "tok3n", origin: "http://\(host)", host: host))
            #expect(try client.readHead().hasPrefix("HTTP/1.1 101"))
            func nextText() throws -> String {
                let f = try client.readFrame()
                #expect(f.opcode == 1)
                return String(decoding: f.payload, as: UTF8.self)
            }
            let frame = StudioMediaFrame(kind: .video, isKeyframe: true, captureMicros: 1_700_000_000_000_000, rtpTimestamp: 0, payload: [0x10, 2, 3])
            // Off stage: refused, and said once.
            client.sendBinary(frame.serialized)
            client.sendBinary(frame.serialized)
            #expect(try nextText() == #"{"event":"error","message":"not on stage"}"#)
            client.sendText(#"{"cmd":"camera","on":true}"#)
            #expect(try nextText() == #"{"event":"stage_camera","on":true}"#)
            try server.loop.submit { onStage = true }.wait()
            client.sendBinary(frame.serialized)
            let audio = StudioMediaFrame(kind: .audio, isKeyframe: false, captureMicros: 7, rtpTimestamp: 0, payload: [0xF8, 1])
            client.sendBinary(audio.serialized)
            // A bad header, a short message, one over 256 KiB: counted, answered, the socket stays.
            client.sendBinary([9, 0] + [UInt8](repeating: 0, count: 13))
            #expect(try nextText() == #"{"event":"error","message":"media frame of unknown kind 9 (1 VP8, 2 Opus)"}"#)
            client.sendBinary([2, 1] + [UInt8](repeating: 0, count: 13))
            #expect(try nextText() == #"{"event":"error","message":"media frame flags 1: only bit 0 (keyframe, video only) is defined"}"#)
            client.sendBinary([1, 0, 0])
            #expect(try nextText() == #"{"event":"error","message":"media frame of 3 bytes: the header is 14 and a frame follows"}"#)
            client.sendBinary(frame.header + [UInt8](repeating: 0, count: StudioServer.maxMediaMessage))
            #expect(try nextText() == #"{"event":"error","message":"media frame of 262158 bytes, more than 262144"}"#)
            client.sendText(#"{"cmd":"rooms"}"#)
            client.sendText(#"{"cmd":"camera","on":false}"#)
            #expect(try nextText() == #"{"event":"stage_camera","on":false}"#)
            let (got, stats, cmds) = try server.loop.submit { (taken, server.stats, commands) }.wait()
            #expect(got == [frame, audio])
            #expect(stats.pageMedia == 2 && stats.pageMediaRefused == 2 && stats.malformed == 4)
            #expect(cmds == [.rooms])
            _ = Glibc.shutdown(client.fd, Int32(SHUT_RDWR))
            var waited = 0
            while try server.loop.submit({ closed }).wait() == 0, waited < 50 {
                usleep(20_000)
                waited += 1
            }
            #expect(try server.loop.submit { closed }.wait() == 1)
        }
    }
}
