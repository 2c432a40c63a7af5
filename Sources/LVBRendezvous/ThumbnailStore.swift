import LVBCore
import LVBCrypto
import LVBGossip

/// The rendezvous's thumbnails: the latest verified one of each listed room
/// or replayed room (at most `RoomThumbnail.maxBlob` bytes each), and at most
/// one being put together per room. Forgotten with the room. Sans-IO.
public final class ThumbnailStore {
    private var latest: [RoomID: RoomThumbnail] = [:]
    private var assembling: [RoomID: ThumbnailAssembly] = [:]

    public init() {}

    public var count: Int { latest.count }

    /// The latest thumbnail of `room`, if any.
    public func thumbnail(_ room: RoomID) -> RoomThumbnail? { latest[room] }

    /// A piece from `sender` of `room`'s thumbnail number `seq`; `listing` is
    /// the room as listed (its announcement names the host). Returns the
    /// thumbnail once complete and verified; nil while pieces are missing.
    public func take(_ piece: ThumbnailPiece, room: RoomID, seq: UInt64, from sender: NodeID,
                     listing: RoomListing?) throws(ThumbnailError) -> RoomThumbnail? {
        try take(piece, room: room, seq: seq, signedBy: listing?.announcement.host == sender ? sender : nil)
    }

    /// A piece of `room`'s thumbnail number `seq`, to be signed by `host`
    /// (nil: nobody here may give this room a thumbnail). Returns the
    /// thumbnail once complete and verified; nil while pieces are missing.
    public func take(_ piece: ThumbnailPiece, room: RoomID, seq: UInt64, signedBy host: NodeID?) throws(ThumbnailError) -> RoomThumbnail? {
        guard let host else { throw .notTheHost }
        if let kept = latest[room], seq <= kept.seq { throw .replayed }
        if let current = assembling[room] {
            if seq < current.seq { throw .replayed }
            if seq > current.seq { assembling[room] = nil }
        }
        var assembly = assembling[room] ?? ThumbnailAssembly(room: room, seq: seq, count: piece.count)
        let done: RoomThumbnail?
        do { done = try assembly.add(piece) } catch {
            assembling[room] = nil
            throw error
        }
        guard let done else {
            assembling[room] = assembly
            return nil
        }
        assembling[room] = nil
        guard done.verify(host: host) else { throw .badSignature }
        latest[room] = done
        return done
    }

    /// Forgets the thumbnails of rooms no longer listed.
    public func forget(unless listed: (RoomID) -> Bool) {
        latest = latest.filter { listed($0.key) }
        assembling = assembling.filter { listed($0.key) }
    }
}
