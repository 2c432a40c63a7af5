import Foundation
import Testing

/// The command line comes from the vendored swift-argument-parser, whose only
/// change is that it does not link Foundation (Vendor/swift-argument-parser).
@Suite(.ownThread) struct HelpProcessTests {
    /// --experimental-dump-help is written by the vendored parser's own small
    /// JSON encoder: it must be exactly what Foundation's JSONEncoder writes
    /// with [.prettyPrinted, .sortedKeys], which JSONSerialization reproduces.
    @Test func theHelpDumpIsFoundationsJSONByteForByte() throws {
        for command in [[], ["host"], ["join"], ["impair"]] {
            let (status, out, _) = try runToEnd(command + ["--experimental-dump-help"])
            #expect(status == 0)
            let object = try JSONSerialization.jsonObject(with: Data(out.utf8))
            let again = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
            #expect(String(decoding: again, as: UTF8.self) + "\n" == out, "\(command)")
            let info = try #require(object as? [String: Any])
            #expect(info["serializationVersion"] as? Int == 0)
            let name = (info["command"] as? [String: Any])?["commandName"] as? String
            #expect(name == (command.first ?? "lvbnode"))
        }
    }

    @Test func helpAndUsageErrorsStillWork() throws {
        let (status, out, _) = try runToEnd(["--help"])
        #expect(status == 0)
        #expect(out.contains("USAGE: lvbnode <subcommand>"))
        let (status2, _, err2) = try runToEnd(["host", "--no-such-option"])
        #expect(status2 == 64)
        #expect(err2.contains("Unknown option '--no-such-option'"))
    }
}
