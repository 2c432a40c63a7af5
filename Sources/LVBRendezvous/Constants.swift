/// The rendezvous layer's numbers (STYLE rule 2): STUN values fixed by
/// RFC 8489, then tuning values.
public enum RendezvousConstants {
    // MARK: Specification (RFC 8489)

    /// §6: the magic cookie, bytes 4–7 of every STUN message.
    public static let magicCookie: UInt32 = 0x2112_A442
    /// §5: the fixed header (type, length, cookie, 96-bit transaction id).
    public static let stunHeaderSize = 20
    public static let transactionIDSize = 12
    /// §14.7: FINGERPRINT is the CRC-32 of the message XOR this value.
    public static let fingerprintXOR: UInt32 = 0x5354_554E

    /// §5: message types (method Binding 0x001 with the class bits).
    public enum MessageType {
        public static let bindingRequest: UInt16 = 0x0001
        public static let bindingIndication: UInt16 = 0x0011
        public static let bindingSuccess: UInt16 = 0x0101
        public static let bindingError: UInt16 = 0x0111
    }

    /// §18.3: attribute types this implementation reads or writes.
    public enum Attribute {
        public static let mappedAddress: UInt16 = 0x0001
        /// RFC 5780 §7.2 (comprehension-required): answer from another IP or port.
        public static let changeRequest: UInt16 = 0x0003
        public static let username: UInt16 = 0x0006
        public static let messageIntegrity: UInt16 = 0x0008
        public static let errorCode: UInt16 = 0x0009
        public static let unknownAttributes: UInt16 = 0x000A
        public static let realm: UInt16 = 0x0014
        public static let nonce: UInt16 = 0x0015
        public static let messageIntegritySHA256: UInt16 = 0x001C
        public static let passwordAlgorithm: UInt16 = 0x001D
        public static let userhash: UInt16 = 0x001E
        public static let xorMappedAddress: UInt16 = 0x0020
        /// ICE's connectivity-check attributes (RFC 8445 §16.1): a Binding
        /// server understands them by ignoring them.
        public static let priority: UInt16 = 0x0024
        public static let useCandidate: UInt16 = 0x0025
        public static let passwordAlgorithms: UInt16 = 0x8002
        public static let alternateDomain: UInt16 = 0x8003
        public static let software: UInt16 = 0x8022
        public static let alternateServer: UInt16 = 0x8023
        public static let fingerprint: UInt16 = 0x8028
        /// RFC 5780 §7.4: the server's alternate address and port (MAPPED-ADDRESS's format).
        public static let otherAddress: UInt16 = 0x802C
        /// Types below this are comprehension-required (§14).
        public static let comprehensionOptionalFrom: UInt16 = 0x8000
    }

    /// §14.1–14.2: address families in (XOR-)MAPPED-ADDRESS.
    public static let familyIPv4: UInt8 = 0x01
    public static let familyIPv6: UInt8 = 0x02

    /// §15: the error code for a request with comprehension-required
    /// attributes the server does not understand.
    public static let unknownAttributeError = 420

    // MARK: Specification (RFC 5780, NAT behaviour discovery)

    /// §7.2: CHANGE-REQUEST's value is four bytes, the last holding these
    /// flags (attribute types: `Attribute.changeRequest`, `.otherAddress`).
    public static let changeIPFlag: UInt8 = 0x04
    public static let changePortFlag: UInt8 = 0x02
    public static let changeRequestSize = 4

    // MARK: Specification (lvbnode-protocol(7), RENDEZVOUS)

    /// Announcement layout version, and the signature's domain separation.
    public static let announceVersion: UInt8 = 1
    public static let announceContext = Array("lvbnode announce v1".utf8)
    /// A room is listed this long after its latest announcement; hosts
    /// announce every `announceInterval`.
    public static let announceTTL: Duration = .seconds(30)
    public static let announceInterval: Duration = .seconds(10)
    /// An announcement signed further than this from the rendezvous's clock
    /// (either way) is stale or from a broken clock, and refused.
    public static let announceClockSkew: Duration = .seconds(60)
    /// The rendezvous's default UDP port.
    public static let defaultPort: UInt16 = 7600
    /// Rooms per page of the room list.
    public static let roomsPerPage = 20
    public static let maxAnnouncedAddresses = 8
    public static let maxAnnouncement = 1100
    /// Addresses in one introduce or introduction message.
    public static let maxIntroducedAddresses = 8
    /// Thumbnails: the signature's domain separation, and the largest JPEG
    /// (a rendezvous keeps one per listed room).
    public static let thumbnailContext = Array("lvbnode thumbnail v1".utf8)
    public static let maxThumbnailBytes = 8192

    // MARK: Tuning

    /// A node asks a rendezvous again this often until it answers.
    public static let requestRetry: Duration = .milliseconds(500)
    /// How long `rooms` and a join by room id wait for a rendezvous to answer.
    public static let queryTimeout: Duration = .seconds(5)
    /// Rendezvous messages one session may send per second, and at once
    /// (a host announces every 10 s; a viewer pages or resolves now and then).
    public static let requestRate = 10
    public static let requestBurst = 20
    /// STUN requests one source IP address may send per second, and at once.
    public static let stunRate = 20
    public static let stunBurst = 40
    /// Rooms one rendezvous lists at most (soft state; the oldest are dropped first).
    public static let maxRooms = 10_000
    /// A room id stays its host's this long after its last announcement.
    public static let roomOwnership: Duration = .seconds(600)

    /// Introductions a host dials per second, and at once (each dial is a
    /// few handshake initiations; a flood of joiners costs it no more).
    public static let introductionRate = 20
    public static let introductionBurst = 40
    /// A joiner asks for an introduction again this often, this many times at most.
    public static let introduceRetry: Duration = .milliseconds(500)
    public static let introduceAttempts = 10
    /// Introduced but still without a session: the joiner asks again this
    /// often, for this long, so that a side whose address changed (a NAT
    /// rebinding) is introduced again at its new address.
    public static let reintroduceAsk: Duration = .seconds(1)
    public static let reintroduceWindow: Duration = .seconds(20)
    /// The rendezvous tells the host about a joiner asking again, where
    /// neither moved, at most this often (its first introduction may be lost).
    public static let reintroduceHostAfter: Duration = .seconds(2)
    /// A browsing viewer asks for the first page of the list again this often
    /// (its neighbours to preload follow the list; rooms come and go).
    public static let browseRefresh: Duration = .seconds(10)
    /// A node asks a rendezvous for one room's thumbnail at most this often
    /// (within the rendezvous's request rate, beside its list requests).
    public static let thumbnailRequestPace: Duration = .milliseconds(150)

    /// The relay: one pair's share at most (kbit/s; a stream and its repairs),
    /// and how long after its introduction or last relayed datagram a pair may use it.
    public static let relayPairKbps = 2500
    public static let relayPairLifetime: Duration = .seconds(600)

    /// A node asks its STUN servers again this often once answered (it also
    /// keeps the NAT mapping alive; RFC 4787 asks NATs for at least 2 minutes).
    public static let stunRefresh: Duration = .seconds(25)

    /// Unknown attributes listed in one 420 answer (the answer stays small).
    public static let maxListedUnknownAttributes = 4

    /// `lvbnode netcheck`: a probe's unanswered Binding request is sent
    /// again this often (a new transaction each time, so each answer times
    /// its own round trip), and the answer to a change-port request is
    /// awaited this long after the plain one came (a filtering NAT drops it).
    public static let probeRetry: Duration = .milliseconds(250)
    public static let filteringWait: Duration = .seconds(1)
    /// How long `lvbnode netcheck` waits for each rendezvous by default.
    public static let netcheckTimeout: Duration = .seconds(3)
}
