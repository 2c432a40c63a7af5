/// Counters of a `VirtualNetwork` since it was created.
public struct NetworkStats: Equatable, Sendable {
    /// Datagrams handed to the network by endpoints.
    public var sent = 0
    /// Copies delivered to an endpoint.
    public var delivered = 0
    /// Datagrams dropped by a link's loss.
    public var dropped = 0
    /// Datagrams dropped because their link was cut or a node isolated, when
    /// sent or when due.
    public var droppedCut = 0
    /// Copies dropped because no open endpoint had the destination address.
    public var droppedNoEndpoint = 0
    /// Copies to a NAT's public IP on a port with no live mapping.
    public var droppedNATNoMapping = 0
    /// Copies a NAT's filter refused: the mapping exists, the source is not allowed in.
    public var droppedNATFiltered = 0
    /// Datagrams to the sender's own NAT's public IP when the NAT does not hairpin.
    public var droppedNATHairpin = 0
    /// Extra copies made by a link's duplication.
    public var duplicated = 0
    /// Bytes handed to the network by endpoints.
    public var bytesSent = 0
    /// Bytes delivered to endpoints (each copy counted).
    public var bytesDelivered = 0
    /// Hop-limited datagrams (hole punching's openers) that died after their own NAT.
    public var droppedHopLimit = 0
    public init() {}
}
