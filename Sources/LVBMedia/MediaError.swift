/// Errors of the media layer: malformed media packets from the network
/// (counted and dropped by callers) and codec failures with the library's own message.
public enum MediaError: Error, Equatable, CustomStringConvertible {
    /// A packet is shorter than its headers say.
    case truncated(String)
    /// A field has a value the format does not allow; the text says which.
    case malformed(String)
    /// libvpx or libopus refused; carries the library's message.
    case codec(String)
    /// A parameter the caller gave is out of range.
    case invalidParameter(String)
    /// A file the user named cannot be read or written, or holds a format we do not
    /// support; the text names the file and what is supported, as one line.
    case file(String)

    public var description: String {
        switch self {
        case let .truncated(what): "truncated \(what)"
        case let .malformed(why): "malformed: \(why)"
        case let .codec(message): "codec error: \(message)"
        case let .invalidParameter(why): "invalid parameter: \(why)"
        case let .file(message): message
        }
    }
}
