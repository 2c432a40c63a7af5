import ArgumentParser
import LVBCore

/// The lvbnode command: a peer-to-peer live-room node in one binary.
@main
struct LVBNode: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lvbnode",
        abstract: "A serverless peer-to-peer live-room node.",
        discussion: """
            Every node is both streamer and viewer. `lvbnode host` starts a room and prints a join \
            ticket; `lvbnode join TICKET` (or IP:PORT) joins it over an encrypted UDP session. \
            `lvbnode rendezvous` lists live rooms (and answers STUN); hosts announce to it with \
            --rendezvous, `lvbnode rooms` shows the list and `lvbnode join ROOM-ID --rendezvous ADDR` \
            joins one; `lvbnode netcheck --rendezvous ADDR` reports this machine's NAT. See lvbnode(1) and lvbnode-protocol(7).
            """,
        version: CoreConstants.version,
        subcommands: [HostCommand.self, JoinCommand.self, RendezvousCommand.self, RoomsCommand.self, NetcheckCommand.self, ReplaysCommand.self, IdCommand.self, ImpairCommand.self, MeshCommand.self])
}
