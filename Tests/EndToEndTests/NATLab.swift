import Foundation
import LVBMesh

/// The NAT lab (LVBMesh) with the binary run in it as processes.
extension NATLab {
    /// A rendezvous on the internet and a host behind home 1 announcing to
    /// it: both processes, the room id and the host's id, once announced.
    func room(relayKbps: Int = 0, hostArguments: [String] = ["--size", "320x180"]) throws -> (rv: NodeProcess, host: NodeProcess, room: String, hostID: String) {
        let rv = try run("rv", ["rendezvous", "--ephemeral", "--listen", "0.0.0.0:7600", "--json", "--relay-kbps", "\(relayKbps)"])
        guard rv.waitFor("ready") != nil else { throw LabError(message: "rendezvous: \(rv.stderr)") }
        let host = try run("1", ["host", "--ephemeral", "--listen", "0.0.0.0:7400", "--json", "--rendezvous", rendezvous] + hostArguments)
        guard let ready = host.waitFor("ready"), let room = ready["room"] as? String, let id = ready["id"] as? String else {
            throw LabError(message: "host: \(host.stderr)")
        }
        Thread.sleep(forTimeInterval: 1)  // its first announcement
        return (rv, host, room, id)
    }

    /// The binary in the rendezvous's namespace ("rv") or behind home "1"…
    func run(_ site: String, _ arguments: [String]) throws -> NodeProcess {
        let command = command(in: site, [NodeProcess.binary.path])
        return try NodeProcess(arguments, executable: URL(fileURLWithPath: command.executable), prefix: command.arguments)
    }
}
