import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import TestAssertions
import Testing

/// Link-mic signalling: the signed wire messages and both sides' state machines.
@Suite struct LinkMicTests {
    let host = identity(1), guest = identity(2), other = identity(3)
    let t0 = Instant(nanoseconds: 1_000_000_000)

    private func message(_ body: LinkMicMessage.Body, request: UInt64 = 0x1234, by sender: Identity? = nil) -> LinkMicMessage {
        LinkMicMessage(room: testRoom, request: request, body: body, sender: sender ?? host)
    }

    private func parsed(_ m: LinkMicMessage) throws -> LinkMicMessage {
        guard let back = try RoomMessage.parse(m.encoded[...]).as(LinkMicMessage.self) else { throw RoomError.truncated }
        return back
    }

    // MARK: Wire

    @Test func everyMessageRoundTripsSignedByItsSender() throws {
        for body: LinkMicMessage.Body in [.request(message: "may I sing? 🎤"), .answer(guest: guest.nodeID, accepted: true, reason: ""),
                                          .answer(guest: guest.nodeID, accepted: false, reason: "not now"), .hangup(.silent)] {
            let m = message(body, by: guest)
            let back = try parsed(m)
            #expect(back == m)
            #expect(back.isSigned(by: guest.nodeID))
            #expect(!back.isSigned(by: host.nodeID))
        }
    }

    @Test func anyChangedByteBreaksTheSignatureOrTheLayout() throws {
        let m = message(.answer(guest: guest.nodeID, accepted: true, reason: "welcome"))
        for i in 1..<m.encoded.count {
            var bytes = m.encoded
            bytes[i] ^= 0x01
            guard let back = (try? RoomMessage.parse(bytes[...]))?.as(LinkMicMessage.self) else { continue }
            #expect(!back.isSigned(by: host.nodeID), "byte \(i)")
        }
    }

    @Test func malformedMessagesThrowTheirError() {
        let good = message(.hangup(.guestHungUp)).encoded
        expectError(RoomError.truncated) { () throws(RoomError) in _ = try RoomMessage.parse(good.prefix(60)) }
        expectError(RoomError.trailingBytes) { () throws(RoomError) in
            _ = try RoomMessage.parse((good.dropLast(64) + [0] + good.suffix(64))[...])
        }
        var badReason = good
        badReason[25] = 9
        expectError(RoomError.unknownResult(9)) { () throws(RoomError) in _ = try RoomMessage.parse(badReason[...]) }
        // A control character in a request's text.
        var w = ByteWriter(capacity: 100)
        w.write(RoomMessage.Kind.linkMicRequest.rawValue)
        w.write(bytes: testRoom.bytes)
        w.write(UInt64(1))
        w.writeShortBytes([0x41, 0x07])
        w.writeZeros(64)
        expectError(RoomError.badText) { () throws(RoomError) in _ = try RoomMessage.parse(w.bytes[...]) }
    }

    @Test func longTextIsCutOnACharacterBoundary() {
        let m = message(.request(message: String(repeating: "é", count: 150)), by: guest)
        guard case .request(let text) = m.body else { Issue.record("not a request"); return }
        #expect(text.utf8.count == RoomConstants.linkMicTextMax)
        #expect(text.allSatisfy { $0 == "é" })
    }

    // MARK: Host

    @Test func theHostQueuesAcceptsAndRemembersItsAnswer() throws {
        var desk = LinkMicHost(maxGuests: 1)
        #expect(desk.receiveRequest(7, message: "hi", from: guest.nodeID, now: t0) == [.output(.request(guest.nodeID, message: "hi"))])
        #expect(desk.receiveRequest(7, message: "hi", from: guest.nodeID, now: t0).isEmpty)  // a repeat while pending
        let accepted = try desk.accept(guest.nodeID, now: t0)
        let answer = LinkMicMessage.Body.answer(guest: guest.nodeID, accepted: true, reason: "")
        #expect(accepted == [.send(answer, request: 7, to: guest.nodeID), .stageOn(guest.nodeID)])
        // The answer was lost and the viewer repeats its request: the same answer again, nothing else.
        #expect(desk.receiveRequest(7, message: "hi", from: guest.nodeID, now: t0) == [.send(answer, request: 7, to: guest.nodeID)])
        // The stage is full.
        _ = desk.receiveRequest(8, message: "", from: other.nodeID, now: t0)
        expectError(LinkMicError.stageFull(1)) { () throws(LinkMicError) in _ = try desk.accept(other.nodeID, now: t0) }
        // Nobody asked.
        expectError(LinkMicError.noRequest(host.nodeID.short)) { () throws(LinkMicError) in _ = try desk.accept(host.nodeID, now: t0) }
    }

    @Test func aHostWithoutLinkMicSaysNoAtOnce() {
        var desk = LinkMicHost(maxGuests: 0)
        let no = LinkMicMessage.Body.answer(guest: guest.nodeID, accepted: false, reason: "this room takes no co-hosts")
        #expect(desk.receiveRequest(3, message: "", from: guest.nodeID, now: t0) == [.send(no, request: 3, to: guest.nodeID)])
        #expect(desk.pending.isEmpty)
    }

    @Test func requestsExpireAndSilentGuestsAreTakenOff() throws {
        var desk = LinkMicHost(maxGuests: 3)
        _ = desk.receiveRequest(1, message: "", from: guest.nodeID, now: t0)
        _ = desk.receiveRequest(2, message: "", from: other.nodeID, now: t0)
        _ = try desk.accept(guest.nodeID, now: t0)
        let heard = t0 + .milliseconds(1500)
        #expect(desk.tick(now: t0 + .seconds(3), lastMedia: { $0 == guest.nodeID ? heard : nil }).isEmpty)
        #expect(desk.tick(now: heard + RoomConstants.guestSilence, lastMedia: { _ in heard })
                == [.send(.hangup(.silent), request: 1, to: guest.nodeID), .stageOff(guest.nodeID, .silent)])
        #expect(desk.tick(now: t0 + RoomConstants.linkMicRequestLifetime, lastMedia: nil) == [.output(.expired(other.nodeID))])
        #expect(desk.pending.isEmpty && desk.guests.isEmpty)
    }

    /// A lost acceptance is said again until the guest's media shows it
    /// arrived, well before the guest's silence would take it off stage.
    @Test func theHostRepeatsItsAcceptanceUntilTheGuestsMediaArrives() throws {
        var desk = LinkMicHost(maxGuests: 2)
        _ = desk.receiveRequest(1, message: "", from: guest.nodeID, now: t0)
        _ = try desk.accept(guest.nodeID, now: t0)
        let accept = LinkMicAction.send(.answer(guest: guest.nodeID, accepted: true, reason: ""), request: 1, to: guest.nodeID)
        let every = RoomConstants.linkMicAnswerRepeat
        let repeatAt = t0 + every, again = t0 + every * 2
        #expect(desk.tick(now: t0 + (every - .milliseconds(1)), lastMedia: { _ in nil }).isEmpty)
        #expect(desk.tick(now: repeatAt, lastMedia: { _ in nil }) == [accept])
        #expect(desk.tick(now: repeatAt + .milliseconds(1), lastMedia: { _ in nil }).isEmpty)  // not every tick
        #expect(desk.tick(now: again, lastMedia: { _ in nil }) == [accept])
        // Its media arrived: nothing more to say.
        #expect(desk.tick(now: t0 + .milliseconds(1900), lastMedia: { _ in again }).isEmpty)
        #expect(RoomConstants.linkMicAnswerRepeat * 3 < RoomConstants.guestSilence)
    }

    /// Accepted and taken off (silent) before the acceptance arrived: the
    /// asking guest learns its request ended, and may ask again.
    @Test func aHangupWhileStillAskingEndsTheRequest() throws {
        var me = LinkMicGuest()
        _ = try me.ask("", request: 11, host: host.nodeID, now: t0)
        #expect(refused(me.receive(message(.hangup(.silent), request: 12), from: host.nodeID, host: host.nodeID, me: guest.nodeID)))
        #expect(me.receive(message(.hangup(.silent), request: 11), from: host.nodeID, host: host.nodeID, me: guest.nodeID)
                == [.output(.ended(.silent))])
        #expect(me.phase == .idle)
        #expect(try me.ask("", request: 13, host: host.nodeID, now: t0).count == 1)
    }

    @Test func eitherSideHangsUpAndAGoneGuestLeavesTheStage() throws {
        var desk = LinkMicHost(maxGuests: 3)
        for (n, id) in [guest.nodeID, other.nodeID, host.nodeID].enumerated() {
            _ = desk.receiveRequest(UInt64(n + 1), message: "", from: id, now: t0)
            _ = try desk.accept(id, now: t0)
        }
        #expect(try desk.hangUp(guest.nodeID) == [.send(.hangup(.hostHungUp), request: 1, to: guest.nodeID), .stageOff(guest.nodeID, .hostHungUp)])
        #expect(desk.receiveHangup(99, from: other.nodeID).isEmpty)  // not its request id
        #expect(desk.receiveHangup(2, from: other.nodeID) == [.stageOff(other.nodeID, .guestHungUp)])
        #expect(desk.peerGone(host.nodeID) == [.stageOff(host.nodeID, .left)])
        expectError(LinkMicError.notOnStage) { () throws(LinkMicError) in _ = try desk.hangUp(guest.nodeID) }
    }

    // MARK: Guest

    @Test func theGuestGoesOnStageOnlyOnTheHostsSignedAnswerToItsRequest() throws {
        var me = LinkMicGuest()
        #expect(try me.ask("hi", request: 5, host: host.nodeID, now: t0) == [.send(.request(message: "hi"), request: 5, to: host.nodeID)])
        expectError(LinkMicError.alreadyAsked) { () throws(LinkMicError) in _ = try me.ask("again", request: 6, host: host.nodeID, now: t0) }
        let accept = LinkMicMessage.Body.answer(guest: guest.nodeID, accepted: true, reason: "")
        func receive(_ m: LinkMicMessage, from: NodeID) -> [LinkMicAction] {
            me.receive(m, from: from, host: host.nodeID, me: guest.nodeID)
        }
        // Forged: from another member, or signed by another key over the host's session.
        #expect(refused(receive(message(accept, request: 5, by: other), from: other.nodeID)))
        #expect(refused(receive(message(accept, request: 5, by: other), from: host.nodeID)))
        // Replayed: an accept for an earlier request.
        #expect(refused(receive(message(accept, request: 4), from: host.nodeID)))
        // Another guest's answer.
        #expect(refused(receive(message(.answer(guest: other.nodeID, accepted: true, reason: ""), request: 5), from: host.nodeID)))
        #expect(me.phase == .asking(request: 5, message: "hi", since: t0, lastSent: t0))
        #expect(receive(message(accept, request: 5), from: host.nodeID) == [.startPublishing, .output(.accepted)])
        #expect(receive(message(accept, request: 5), from: host.nodeID).isEmpty)  // a repeated answer
        // A late reject for the same request does not take us off.
        #expect(refused(receive(message(.answer(guest: guest.nodeID, accepted: false, reason: ""), request: 5), from: host.nodeID)))
        #expect(receive(message(.hangup(.hostHungUp), request: 5), from: host.nodeID) == [.stopPublishing, .output(.ended(.hostHungUp))])
        #expect(me.phase == .idle)
    }

    @Test func theGuestRepeatsItsRequestThenGivesUp() throws {
        var me = LinkMicGuest()
        _ = try me.ask("", request: 9, host: host.nodeID, now: t0)
        #expect(me.tick(now: t0 + .seconds(1), host: host.nodeID, me: guest.nodeID).isEmpty)
        #expect(me.tick(now: t0 + RoomConstants.linkMicRetry, host: host.nodeID, me: guest.nodeID)
                == [.send(.request(message: ""), request: 9, to: host.nodeID)])
        #expect(me.tick(now: t0 + RoomConstants.linkMicRequestLifetime, host: host.nodeID, me: guest.nodeID)
                == [.output(.expired(guest.nodeID))])
        #expect(me.phase == .idle)
        // Withdrawing a request tells the host; hanging up with nothing going on is an error.
        _ = try me.ask("", request: 10, host: host.nodeID, now: t0)
        #expect(try me.hangUp(host: host.nodeID) == [.send(.hangup(.guestHungUp), request: 10, to: host.nodeID)])
        expectError(LinkMicError.notOnStage) { () throws(LinkMicError) in _ = try me.hangUp(host: host.nodeID) }
    }

    @Test func aRejectEndsTheRequestAndALostHostEndsTheStage() throws {
        var me = LinkMicGuest()
        _ = try me.ask("", request: 3, host: host.nodeID, now: t0)
        #expect(me.receive(message(.answer(guest: guest.nodeID, accepted: false, reason: "later"), request: 3),
                           from: host.nodeID, host: host.nodeID, me: guest.nodeID) == [.output(.rejected(reason: "later"))])
        _ = try me.ask("", request: 4, host: host.nodeID, now: t0)
        _ = me.receive(message(.answer(guest: guest.nodeID, accepted: true, reason: ""), request: 4),
                       from: host.nodeID, host: host.nodeID, me: guest.nodeID)
        #expect(me.stageLost(.left) == [.stopPublishing, .output(.ended(.left))])
        #expect(me.stageLost(.left).isEmpty)
    }

    /// The room's stage event can overtake the host's own hangup: the hangup
    /// that follows is late news of the ended request, not a refusal; a
    /// message for any other request still is one.
    @Test func theHostsHangupAfterTheStageEventIsNotRefused() throws {
        var me = LinkMicGuest()
        func receive(_ m: LinkMicMessage) -> [LinkMicAction] {
            me.receive(m, from: host.nodeID, host: host.nodeID, me: guest.nodeID)
        }
        _ = try me.ask("", request: 7, host: host.nodeID, now: t0)
        _ = receive(message(.answer(guest: guest.nodeID, accepted: true, reason: ""), request: 7))
        #expect(me.stageLost(.hostHungUp) == [.stopPublishing, .output(.ended(.hostHungUp))])
        #expect(receive(message(.hangup(.hostHungUp), request: 7)).isEmpty)
        #expect(receive(message(.answer(guest: guest.nodeID, accepted: true, reason: ""), request: 7)).isEmpty)
        #expect(me.phase == .idle)
        #expect(refused(receive(message(.hangup(.hostHungUp), request: 6))))
        // Asking again: the new request is what counts.
        _ = try me.ask("", request: 8, host: host.nodeID, now: t0)
        #expect(refused(receive(message(.answer(guest: guest.nodeID, accepted: true, reason: ""), request: 7))))
    }

    private func refused(_ actions: [LinkMicAction]) -> Bool {
        guard actions.count == 1, case .output(.refused) = actions[0] else { return false }
        return true
    }
}
