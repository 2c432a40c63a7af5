import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import Testing

/// The room-wide chat rate (slow mode): an author holds its line back when
/// the room already carries the rate, with a line saying so; what was sent
/// reaches everyone.
@Suite struct ChatRateTests {
    @Test func theRateTravelsInTheRoomInfoAndIsChecked() throws {
        let info = RoomInfo(title: "busy", chatRate: 40)
        let body = EventBody.roomInfo(info)
        var w = ByteWriter()
        body.content.encode(into: &w)
        #expect(w.bytes.suffix(4) == [5, 2, 0, 40])
        for bad: UInt16 in [0, 1001] {
            #expect(throws: EventError.self) { try EventBody.roomInfo(RoomInfo(chatRate: bad)).validate() }
        }
        for bad in ["0", "1001", "fast", ""] {
            #expect(throws: RoomActionError.self) { try RoomEvents.command(console: "/chatrate")?.consoleAction(bad) }
        }
        #expect(throws: Never.self) { try RoomEvents.command(console: "/chatrate")?.consoleAction("40") }
    }

    @Test func anAuthorPastTheRoomsRateIsToldToWaitAndNothingSentIsLost() throws {
        let (net, host, viewers) = simRoom(viewers: 4, seed: 2802, loss: 0)
        #expect(net.run(until: { viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(10)))
        try host.room.setChatRate(2)
        #expect(net.run(until: { viewers.allSatisfy { $0.room.state?.roomChatRate == 2 } }, timeout: .seconds(5)))
        // Two a second over a two-second window: four lines, from two authors.
        try viewers[0].room.chat("one")
        try viewers[1].room.chat("two")
        net.run(for: .milliseconds(200))
        try viewers[0].room.chat("three")
        try viewers[1].room.chat("four")
        net.run(for: .milliseconds(200))
        #expect(throws: RoomActionError.refused("the room is busy: it carries 2 chat lines a second (the host's chat rate); say it again in a moment")) {
            try viewers[2].room.chat("five")
        }
        net.run(for: .seconds(2))
        try viewers[2].room.chat("five")
        net.run(for: .seconds(1))
        for n in [host] + viewers {
            #expect(Set(n.chats) == ["one", "two", "three", "four", "five"], "\(n.id.short): \(n.chats)")
        }
    }
}
