#if canImport(Glibc)
import Glibc
#endif
import LVBWeb
import Testing

/// The binary serves what Sources/LVBWeb/Page holds: Scripts/embed-page was
/// run after the last change of the page.
@Suite struct StudioPageTests {
    static let pageDirectory = String(#filePath.split(separator: "/").dropLast(3).joined(separator: "/")).withLeadingSlash + "/Sources/LVBWeb/Page"

    static func files(under dir: String, prefix: String = "") -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var out: [String] = []
        while let entry = readdir(d) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard !name.hasPrefix(".") else { continue }
            if entry.pointee.d_type == UInt8(DT_DIR) {
                out += files(under: dir + "/" + name, prefix: prefix + name + "/")
            } else {
                out.append(prefix + name)
            }
        }
        return out
    }

    static func read(_ path: String) -> [UInt8]? {
        guard let f = fopen(path, "rb") else { return nil }
        defer { fclose(f) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&buf, 1, buf.count, f)
            if n <= 0 { break }
            out += buf[..<n]
        }
        return out
    }

    @Test func theEmbeddedPageIsThePageOnDisk() throws {
        let onDisk = Self.files(under: Self.pageDirectory).sorted()
        #expect(!onDisk.isEmpty, "no page files under \(Self.pageDirectory)")
        #expect(StudioPage.names == onDisk, "run Scripts/embed-page")
        for name in onDisk {
            #expect(StudioPage.file(at: "/" + name)?.bytes == Self.read(Self.pageDirectory + "/" + name), "\(name) differs: run Scripts/embed-page")
        }
        #expect(StudioPage.file(at: "/")?.contentType == "text/html; charset=utf-8")
    }
}

private extension String {
    var withLeadingSlash: String { hasPrefix("/") ? self : "/" + self }
}
