import LVBCore
import LVBMedia
import LVBWeb
import Testing

@Suite struct JSONValueTests {
    @Test func parsesWhatThePageSends() throws {
        let v = try JSONValue.parse(Array(#" {"cmd":"chat","text":"h\u00e9llo \ud83d\ude00 \"q\"\n","n":-1.5e2,"ok":true,"x":null,"a":[1,[2]]} "#.utf8))
        #expect(v["cmd"]?.string == "chat")
        #expect(v["text"]?.string == "héllo 😀 \"q\"\n")
        #expect(v["n"]?.number == -150)
        #expect(v["ok"]?.bool == true)
        #expect(v["x"] == .null)
        #expect(v["a"] == .array([.number(1), .array([.number(2)])]))
    }

    @Test func refusesWhatIsNotJSON() {
        let bad = [#"{"a":1"#, #"{"a" 1}"#, #"{"a":01x}"#, #"{"a":+1}"#, #"{"a":1e}"#, #"["\x"]"#, #"{"a":"\ud800"}"#,
                   #"{"a":1} x"#, "", #"{"a":"tab\#tin"}"#, #"{'a':1}"#, "nul", #"[1,]"#,
                   String(repeating: "[", count: 20) + String(repeating: "]", count: 20)]
        for text in bad {
            #expect(throws: JSONValue.ParseError.self, "\(text)") { try JSONValue.parse(Array(text.utf8)) }
        }
        #expect(throws: JSONValue.ParseError.badUTF8) { try JSONValue.parse([0x22, 0xFF, 0x22]) }
    }

    @Test func quotedStringsParseBackToThemselves() throws {
        for s in ["", "plain", "q\"uote\\back", "line\nfeed\ttab\r", "\u{01}\u{1f}\u{7f}", "<img src=x onerror=alert(1)>", "héllo 😀"] {
            #expect(try JSONValue.parse(Array(JSONValue.quote(s).utf8)) == .string(s), "\(s)")
        }
        #expect(JSONValue.quote("a\u{01}") == #""a\u0001""#)
    }

    @Test func randomBytesNeverCrash() {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]":,0123456789-+.eEtruefalsn\u "#.utf8)
        for _ in 0..<20_000 {
            let n = Int.random(in: 0..<40, using: &rng)
            let bytes = (0..<n).map { _ in Bool.random(using: &rng) ? alphabet.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng) }
            _ = try? JSONValue.parse(bytes)
            _ = try? StudioCommand.parse(bytes)
        }
    }
}

@Suite struct StudioCommandTests {
    /// The room's commands as lvbnode declares them to the server (their fields are checked by their declaration).
    /// (Link-mic, the layout, PK and `/viewers` are declared by their features: `RoomCommandTests` checks their fields.)
    static let roomCommands: Set<String> = ["chat", "danmaku", "like", "kick", "mute", "title", "close", "linkmic", "accept", "pk"]

    func parse(_ text: String) throws(StudioCommand.ParseError) -> StudioCommand {
        try StudioCommand.parse(Array(text.utf8), roomCommands: Self.roomCommands)
    }

    @Test func everyCommand() throws {
        let chat = #"{"cmd":"chat","text":"<img src=x onerror=alert(1)>"}"#
        #expect(try parse(chat) == .room("chat", try JSONValue.parse(Array(chat.utf8))))
        #expect(try parse(#"{"cmd":"camera","on":true}"#) == .camera(true))
        #expect(try parse(#"{"cmd":"camera","on":false}"#) == .camera(false))
        #expect(try parse(#"{"cmd":"rooms"}"#) == .rooms)
        #expect(try parse(#"{"cmd":"switch","to":"next"}"#) == .switchRoom("next"))
        #expect(try parse(#"{"cmd":"switch","to":"prev"}"#) == .switchRoom("prev"))
        #expect(try parse(#"{"cmd":"switch","to":"d73narko5yoa6krgk5myvpf5ye"}"#) == .switchRoom("d73narko5yoa6krgk5myvpf5ye"))
        // A replay from a live viewer's room list, and a replay's page.
        #expect(try parse(#"{"cmd":"replay","id":"d73narko5yoa6krgk5myvpf5ye"}"#) == .replay("d73narko5yoa6krgk5myvpf5ye"))
        #expect(try parse(#"{"cmd":"seek","ms":6000}"#) == .seek(6000))
        #expect(try parse(#"{"cmd":"seek","ms":0}"#) == .seek(0))
        #expect(try parse(#"{"cmd":"pause"}"#) == .pause)
        #expect(try parse(#"{"cmd":"play"}"#) == .play)
        #expect(try parse(#"{"cmd":"speed","x":1.5}"#) == .speed(1.5))
        let linkmic = #"{"cmd":"linkmic","text":"hi"}"#
        #expect(try parse(linkmic) == .room("linkmic", try JSONValue.parse(Array(linkmic.utf8))))
        // A room command the server was not told of is unknown.
        #expect(throws: StudioCommand.ParseError.unknown("chat")) { try StudioCommand.parse(Array(chat.utf8)) }
    }

    @Test func mistakesAreNamed() {
        #expect(throws: StudioCommand.ParseError.notJSON) { try parse("chat hello") }
        #expect(throws: StudioCommand.ParseError.notJSON) { try parse(#"["chat"]"#) }
        #expect(throws: StudioCommand.ParseError.notACommand) { try parse(#"{"text":"x"}"#) }
        #expect(throws: StudioCommand.ParseError.unknown("fly")) { try parse(#"{"cmd":"fly"}"#) }
        #expect(throws: StudioCommand.ParseError.missing("on")) { try parse(#"{"cmd":"camera","on":"yes"}"#) }
        #expect(throws: StudioCommand.ParseError.missing("id")) { try parse(#"{"cmd":"replay"}"#) }
        #expect(throws: StudioCommand.ParseError.invalid("id")) { try parse(#"{"cmd":"replay","id":"../../etc/passwd"}"#) }
        #expect(throws: StudioCommand.ParseError.invalid("id")) { try parse(#"{"cmd":"replay","id":"d73narko5yoa6krgk5myvpf5y"}"#) }
        #expect(throws: StudioCommand.ParseError.missing("to")) { try parse(#"{"cmd":"switch"}"#) }
        #expect(throws: StudioCommand.ParseError.missing("ms")) { try parse(#"{"cmd":"seek"}"#) }
        for ms in ["-1", "1.5", "4294967296", "1e300"] {
            #expect(throws: StudioCommand.ParseError.invalid("ms")) { try parse(#"{"cmd":"seek","ms":\#(ms)}"#) }
        }
        #expect(throws: StudioCommand.ParseError.missing("x")) { try parse(#"{"cmd":"speed","x":"fast"}"#) }
        for x in ["0", "0.1", "4.5", "-1"] {
            #expect(throws: StudioCommand.ParseError.invalid("x")) { try parse(#"{"cmd":"speed","x":\#(x)}"#) }
        }
        // Neither a direction nor a room id (26 characters of lower-case base32).
        for to in ["up", "D73NARKO5YOA6KRGK5MYVPF5YE", "d73narko5yoa6krgk5myvpf5y", "d73narko5yoa6krgk5myvpf5y1"] {
            #expect(throws: StudioCommand.ParseError.invalid("to")) { try parse(#"{"cmd":"switch","to":"\#(to)"}"#) }
        }
    }

    /// The shared field rules a room command's declaration reads the page's fields with.
    @Test func fieldRules() throws {
        func fields(_ text: String) throws -> JSONValue { try JSONValue.parse(Array(text.utf8)) }
        #expect(try fields(#"{"text":"hi"}"#).text("text") == "hi")
        #expect(throws: CommandFieldError.missing("text")) { try fields("{}").text("text") }
        #expect(throws: CommandFieldError.invalid("text")) { try fields(#"{"text":"   "}"#).text("text") }
        #expect(throws: CommandFieldError.invalid("text")) { try fields(#"{"text":5}"#).text("text") }
        #expect(throws: CommandFieldError.invalid("text")) {
            try fields(#"{"text":"\#(String(repeating: "a", count: CommandLimits.maxText + 1))"}"#).text("text")
        }
        #expect(try fields(#"{"count":5}"#).count("count", in: 1...100, fallback: 1) == 5)
        #expect(try fields("{}").count("count", in: 1...100, fallback: 1) == 1)
        #expect(throws: CommandFieldError.invalid("count")) { try fields(#"{"count":1000}"#).count("count", in: 1...100, fallback: 1) }
        #expect(throws: CommandFieldError.invalid("count")) { try fields(#"{"count":1.5}"#).count("count", in: 1...100, fallback: 1) }
        #expect(throws: CommandFieldError.invalid("id")) { try fields(#"{"id":"two words"}"#).word("id") }
        #expect(try fields("{}").optionalWord("id") == nil)
        #expect(CommandLimits.color("#FF8800") == 0xFF8800 && CommandLimits.color("ff8800") == 0xFF8800)
        #expect(CommandLimits.color("red") == nil && CommandLimits.color("#0f0") == nil)
    }
}

@Suite struct StudioMediaFrameTests {
    @Test func headerLayout() {
        let f = StudioMediaFrame(kind: .video, isKeyframe: true, captureMicros: 0x0102_0304_0506_0708, rtpTimestamp: 0xA0B0_C0D0, payload: [9, 8])
        #expect(f.serialized == [1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0xA0, 0xB0, 0xC0, 0xD0, 9, 8])
        let a = StudioMediaFrame(kind: .audio, isKeyframe: false, captureMicros: 0, rtpTimestamp: 1, payload: [])
        #expect(a.serialized == [2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
        var lost = f
        lost.afterLoss = true
        #expect(lost.header[1] == 3)
        lost.isKeyframe = false
        #expect(lost.header[1] == 2)
        var hidden = f
        hidden.catchUp = true
        #expect(hidden.header[1] == 5)
    }

    @Test func aPagesFrameParsesBackAndABadOneIsNamed() throws {
        let f = StudioMediaFrame(kind: .video, isKeyframe: true, captureMicros: 0x0102_0304_0506_0708, rtpTimestamp: 0, payload: [9, 8])
        #expect(try StudioMediaFrame.parse(f.serialized) == f)
        let a = StudioMediaFrame(kind: .audio, isKeyframe: false, captureMicros: 5, rtpTimestamp: 7, payload: [1])
        #expect(try StudioMediaFrame.parse(a.serialized) == a)
        #expect(throws: StudioMediaFrame.ParseError.short(14)) { try StudioMediaFrame.parse(a.header) }
        #expect(throws: StudioMediaFrame.ParseError.kind(0)) { try StudioMediaFrame.parse([0] + a.serialized.dropFirst()) }
        #expect(throws: StudioMediaFrame.ParseError.flags(2)) { try StudioMediaFrame.parse([1, 2] + a.serialized.dropFirst(2)) }
        #expect(throws: StudioMediaFrame.ParseError.flags(1)) { try StudioMediaFrame.parse([2, 1] + a.serialized.dropFirst(2)) }
    }

    @Test func captureTimeFromNTP() {
        // 2024-01-01T00:00:00.5Z: Unix 1704067200 s.
        let ntp = (UInt64(1_704_067_200) + MediaConstants.ntpUnixOffset) << 32 | 0x8000_0000
        #expect(StudioMediaFrame.micros(ntp: ntp) == 1_704_067_200_500_000)
        #expect(StudioMediaFrame.micros(ntp: nil) == 0)
        #expect(StudioMediaFrame.micros(ntp: 5) == 0)
    }
}

@Suite struct StudioAccessTests {
    let access = StudioAccess(token: "s3cret", bound: "127.0.0.1", port: 8080)

    @Test func theTokenInTheQueryOrTheCookie() {
        #expect(access.tokenPresented(uri: "/?token=s3cret", cookie: []))
        #expect(access.tokenPresented(uri: "/ws?x=1&token=s3cret", cookie: []))
        #expect(access.tokenPresented(uri: "/js/main.js", cookie: ["a=b; lvbnode_token_8080=s3cret"]))
        // Another port's page's cookie is not this one's.
        #expect(!access.tokenPresented(uri: "/js/main.js", cookie: ["lvbnode_token_8081=s3cret", "lvbnode_token=s3cret"]))
        #expect(!access.tokenPresented(uri: "/", cookie: []))
        #expect(!access.tokenPresented(uri: "/?token=s3cre", cookie: []))
        #expect(!access.tokenPresented(uri: "/?token=s3cret2", cookie: ["lvbnode_token_8080=nope"]))
        #expect(!access.tokenPresented(uri: "/?tok=s3cret", cookie: ["other_token=s3cret"]))
    }

    @Test func onlyItsOwnHostAndOrigin() {
        #expect(access.hostAllowed("127.0.0.1:8080") && access.hostAllowed("localhost:8080") && access.hostAllowed("[::1]:8080"))
        #expect(!access.hostAllowed("evil.example:8080") && !access.hostAllowed("127.0.0.1:8081") && !access.hostAllowed(nil))
        #expect(access.originAllowed("http://127.0.0.1:8080", host: "127.0.0.1:8080"))
        #expect(!access.originAllowed("http://evil.example", host: "127.0.0.1:8080"))
        #expect(!access.originAllowed("http://localhost:8080", host: "127.0.0.1:8080"))
        #expect(!access.originAllowed(nil, host: "127.0.0.1:8080"))
        let lan = StudioAccess(token: "t", bound: "192.168.1.5", port: 80)
        #expect(lan.hostAllowed("192.168.1.5:80"))
        let v6 = StudioAccess(token: "t", bound: "fd00::1", port: 80)
        #expect(v6.hostAllowed("[fd00::1]:80"))
    }
}
