/// What went wrong with a replay: a file this node holds or was served, or
/// a directory the user named. Each description is one line that says what
/// was wrong and, for the user's mistakes, what to do.
public enum ReplayError: Error, Equatable, CustomStringConvertible {
    /// A segment or manifest is shorter than its fields say.
    case truncated(String)
    /// A field has a value the format does not allow; the text says which.
    case malformed(String)
    /// A manifest's signature is not its host's, or a segment's hash is not
    /// the one its manifest signed.
    case forged(String)
    /// A file or directory could not be read or written; the text names it.
    case file(String)
    /// No replay with this id is held here.
    case unknown(String)
    /// The text is not a replay id.
    case badID(String)

    public var description: String {
        switch self {
        case let .truncated(what): "truncated \(what)"
        case let .malformed(why): "malformed: \(why)"
        case let .forged(why): why
        case let .file(message): message
        case let .unknown(id): "no replay \(id) is held here; `lvbnode replays` lists those that are"
        case let .badID(text): "\(text) is not a replay id (26 Base32 characters, as `lvbnode replays` lists them)"
        }
    }
}
