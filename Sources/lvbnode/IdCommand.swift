import ArgumentParser
import LVBCrypto

/// `lvbnode id`: print this node's id (creating the identity on first use).
struct IdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "id",
        abstract: "Print this node's id (its public key), creating the identity on first use.")

    @OptionGroup var identity: IdentityOptions

    func run() async throws {
        do {
            let (id, _) = try identity.load()
            print(id.nodeID.text)
        } catch {
            Output.fail("\(error)")
            throw ExitCode(1)
        }
    }
}
