import FuzzSupport
import LVBCore
import LVBCrypto
import LVBTransport

// Text a user pastes: join tickets, the base32 and hex inside them, and
// addresses. Parsers must refuse bad text with an error, never trap; what
// they accept must survive a round trip through its canonical form.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)

    if let ticket = try? JoinTicket(text: text) {
        fuzzCheck(!ticket.addresses.isEmpty && ticket.addresses.count <= JoinTicket.maxAddresses, "FuzzTicket", "address count")
        let again = try? JoinTicket(text: ticket.text)
        fuzzCheck(again == ticket, "FuzzTicket", "ticket does not survive re-encoding: \(ticket.text)")
    }

    // Base32 is canonical: lower case, no padding, zero trailing bits.
    if let bytes = try? Base32.decode(text) {
        fuzzCheck(Base32.encode(bytes) == text.lowercased(), "FuzzTicket", "base32 '\(text)' is not canonical")
    }

    if let bytes = try? Hex.decode(text) {
        fuzzCheck(Hex.encode(bytes) == text.lowercased(), "FuzzTicket", "hex '\(text)' is not canonical")
    }

    if let address = try? PeerAddress(parsing: text) {
        let again = try? PeerAddress(parsing: address.description)
        fuzzCheck(again == address, "FuzzTicket", "address '\(text)' → '\(address)' does not parse back")
    }

    if let id = try? NodeID(text: text) {
        fuzzCheck(id.text == text.lowercased(), "FuzzTicket", "node id '\(text)' is not canonical")
    }
    return 0
}

@main enum Main {
    static func main() { runLibFuzzer(fuzz) }
}
