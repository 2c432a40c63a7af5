import Foundation
import Testing

/// A user's mistakes get one clear line on stderr and a non-zero exit.
@Suite(.ownThread) struct UserMistakeTests {
    @Test func aDamagedTicketIsRefusedWithAHint() throws {
        let (status, _, err) = try runToEnd(["join", "lvb1aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "--ephemeral"])
        #expect(status == 64)
        #expect(err.contains("ticket is damaged"))
    }

    @Test func aBadAddressIsRefusedWithAHint() throws {
        let (status, _, err) = try runToEnd(["join", "example.com:7400", "--ephemeral"])
        #expect(status == 64)
        #expect(err.contains("IP:PORT"))
        let (status2, _, err2) = try runToEnd(["host", "--ephemeral", "--listen", "127.0.0.1:99999"])
        #expect(status2 == 64)
        #expect(err2.contains("--listen"))
    }

    /// Issue 47: a newcomer with a room id (as `lvbnode rooms` or a friend
    /// gives it) and no --rendezvous is told what a room id needs; one
    /// mistyped is told it is not an id, not that it is no address.
    @Test func aRoomIDWithoutARendezvousOrMistypedSaysWhatItNeeds() throws {
        let id = "puvqobmshzoyzqi67yxybsinby"
        for given in [id, id.uppercased()] {
            let (status, _, err) = try runToEnd(["join", given, "--ephemeral"])
            #expect(status == 64)
            #expect(err.contains("'\(given)' is a room id (or a replay's): say where to find it with --rendezvous IP:PORT"), "\(err)")
        }
        // The last character's low bits set (no 16-byte id ends so), one cut off, one too many.
        for typo in ["puvqobmshzoyzqi67yxybsinbz", String(id.dropLast()), id + "a"] {
            let (status, _, err) = try runToEnd(["join", typo, "--ephemeral", "--rendezvous", "127.0.0.1:9"])
            #expect(status == 64)
            #expect(err.contains("'\(typo)' is not a room id: an id is 26 characters, a to z and 2 to 7"), "\(err)")
            #expect(err.contains("--rendezvous IP:PORT"), "\(err)")
        }
        let (status, _, err) = try runToEnd(["join", "my-room", "--ephemeral"])
        #expect(status == 64)
        #expect(err.contains("nor a room id (with --rendezvous IP:PORT)"), "\(err)")
    }

    @Test func thePagesCameraAsASourceNeedsAPageAndAHost() throws {
        let (status, _, err) = try runToEnd(["host", "--ephemeral", "--video", "page", "--listen", "127.0.0.1:0"])
        #expect(status != 0 && err.contains("--video page") && err.contains("--web"), "\(err)")
        let (status2, _, err2) = try runToEnd(["join", "127.0.0.1:9", "--ephemeral", "--audio", "page"])
        #expect(status2 != 0 && err2.contains("a host's") && err2.contains("--video none --audio none"), "\(err2)")
    }

    @Test func aPortInUseIsOneClearLineAndExitOne() throws {
        let first = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
        let listen = try #require(first.waitFor("ready")?["listen"] as? String)
        let (status, _, err) = try runToEnd(["host", "--ephemeral", "--listen", listen])
        #expect(status == 1)
        #expect(err.contains("address already in use"))
        #expect(err.split(separator: "\n").count == 1)
        first.signal(SIGTERM)
        _ = first.waitExit()
    }

    @Test func theIdentityPersistsAndAnInsecureOrCorruptKeyFileIsNeverReplaced() throws {
        let home = temporaryDirectory()
        let (s1, id1, _) = try runToEnd(["id", "--home", home])
        let (s2, id2, _) = try runToEnd(["id", "--home", home])
        #expect(s1 == 0 && s2 == 0)
        #expect(id1 == id2 && id1.count == 53)
        let keyFile = home + "/identity.key"
        let mode = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        chmod(keyFile, 0o644)
        let (s3, _, err3) = try runToEnd(["id", "--home", home])
        #expect(s3 == 1)
        #expect(err3.contains("chmod 600"))

        chmod(keyFile, 0o600)
        try "garbage\n".write(toFile: keyFile, atomically: false, encoding: .utf8)
        let (s4, _, err4) = try runToEnd(["id", "--home", home])
        #expect(s4 == 1)
        #expect(err4.contains("corrupt"))
        #expect(try String(contentsOfFile: keyFile, encoding: .utf8) == "garbage\n")
    }

    @Test func theEnvironmentVariableChoosesTheHome() throws {
        let home = temporaryDirectory()
        let p = Process()
        p.executableURL = NodeProcess.binary
        p.arguments = ["id"]
        p.environment = ["LVBNODE_HOME": home, "PATH": "/usr/bin:/bin"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(FileManager.default.fileExists(atPath: home + "/identity.key"))
    }
}
