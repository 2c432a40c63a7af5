/// One JSON object built field by field: a line of the node's NDJSON output
/// (`{"event":…}`) or an object inside one. Absent (nil) fields are left out.
public struct JSONLine: Sendable {
    private var parts: [String] = []

    public init(event: String) { add("event", event) }

    /// An event with string fields.
    public init(event: String, _ fields: (String, String?)...) {
        add("event", event)
        for (k, v) in fields { add(k, v) }
    }

    /// A plain object (an element of a list inside an event).
    public init() {}

    public mutating func add(_ key: String, _ value: String?) {
        guard let value else { return }
        parts.append("\(Self.quote(key)):\(Self.quote(value))")
    }
    public mutating func add(_ key: String, _ value: Int) { parts.append("\(Self.quote(key)):\(value)") }
    public mutating func add(_ key: String, _ value: Double) {
        parts.append("\(Self.quote(key)):\(value.isFinite ? String(value) : "null")")
    }
    public mutating func add(_ key: String, _ value: Bool) { parts.append("\(Self.quote(key)):\(value)") }
    /// A pre-encoded JSON value (array or object).
    public mutating func addRaw(_ key: String, _ json: String) { parts.append("\(Self.quote(key)):\(json)") }

    public var text: String { "{" + parts.joined(separator: ",") + "}" }

    /// `s` as a JSON string literal (RFC 8259), quotes included; control
    /// characters escaped, everything else as it is.
    public static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20 || c.value == 0x7f:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
