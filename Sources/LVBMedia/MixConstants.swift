/// Tuning values of the host's link-mic mix (AudioMixer, AudioLimiter,
/// VideoCompositor, StageRect); kept apart from MediaConstants so the two
/// files can change independently.
public enum MixConstants {
    // MARK: Tuning — audio

    /// Every input is added at this gain. Fixed, never 1/n: the host must not
    /// get quieter when a guest comes on stage.
    public static let mixGain: Float = 1.0
    /// Peaks above this are turned down: 0.89 × full scale, about -1 dBFS,
    /// leaving headroom for the attack's overshoot and for Opus's own.
    public static let limiterThreshold: Float = 0.89 * 32767
    /// How fast the limiter turns down (time constant): short enough to catch
    /// a plosive, long enough not to distort a low note within one period.
    public static let limiterAttack: Duration = .milliseconds(1)
    /// How fast the limiter turns back up: slow enough not to pump on speech.
    public static let limiterRelease: Duration = .milliseconds(100)

    // MARK: Tuning — video

    /// Guests shown at once beside the host (pip tiles, split columns, grid cells).
    public static let maxGuests = 3
    /// A pip tile is this fraction of the canvas's width, in the canvas's aspect.
    public static let pipTileFraction = 4
    /// Gap between pip tiles and the canvas edge: 1/this of the canvas's shorter edge.
    public static let pipMarginFraction = 20
    /// Colour of a guest without a picture and of empty grid cells
    /// (BT.601 limited-range black, as VP8 sources use).
    public static let blackLuma: UInt8 = 16
    public static let neutralChroma: UInt8 = 128

    // MARK: Tuning — the stage mixer

    /// The picture returned to a guest (the mix without it) is at most this
    /// wide: a guest watches the room in a window, not full screen.
    public static let returnMaxWidth = 640
    /// Bitrate floor of a return stream (kbit/s); it gets half the host's target.
    public static let returnMinKbps = 300
    /// Decoded guest pictures waiting to be matched with the guest's sound
    /// (half a second at 30 fps); older ones are dropped.
    public static let alignPictures = 15
    /// Guest sound blocks (20 ms) held while its pictures catch up, and queued at most.
    public static let alignBlocks = 10
    /// A guest picture may be captured up to one frame (1/30 s, in NTP 32.32
    /// units) after the sound it is shown with.
    public static let pictureSlack: UInt64 = (UInt64(1) << 32) / 30
    /// One 20 ms block in NTP 32.32 units (a block's capture time is its first sample's).
    public static let blockNTP: UInt64 = (UInt64(1) << 32) / 50
    /// Guest sound blocks allowed to wait beyond what lip sync needs before
    /// the oldest are skipped (after a burst, the mix catches up with the guest).
    public static let soundBacklog = 2
}
