/// The studio page's files, embedded in the binary (still one static file):
/// `Page/` in this directory, turned into `StudioPageFiles.swift` by
/// `Scripts/embed-page` (a test fails when the two differ).
public enum StudioPage {
    public struct File: Sendable {
        public let contentType: String
        public let bytes: [UInt8]
    }

    /// Every file as served, made once (not per request).
    private static let served: [String: File] = Dictionary(uniqueKeysWithValues: StudioPageFiles.files.map { name, text in
        (name, File(contentType: contentType(of: name), bytes: Array(text.utf8)))
    })

    /// The file served at `path` (`/` is `index.html`); nil for any other.
    public static func file(at path: String) -> File? {
        guard path.hasPrefix("/") else { return nil }
        return served[path == "/" ? "index.html" : String(path.dropFirst())]
    }

    static func contentType(of name: String) -> String {
        if name.hasSuffix(".html") { return "text/html; charset=utf-8" }
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        if name.hasSuffix(".svg") { return "image/svg+xml" }
        return "application/octet-stream"
    }

    /// Every embedded file's name (relative to the page root).
    public static var names: [String] { StudioPageFiles.files.keys.sorted() }
}
