import LVBWeb

/// Builds one JSON object with keys in insertion order, for `--json` output.
struct JSONLine {
    private var parts: [String] = []

    init(event: String) { add("event", event) }

    /// An event with string fields.
    init(event: String, _ fields: (String, String?)...) {
        add("event", event)
        for (k, v) in fields { add(k, v) }
    }

    /// A plain object (an element of a list inside an event).
    init() {}

    mutating func add(_ key: String, _ value: String?) {
        guard let value else { return }
        parts.append("\(Self.quote(key)):\(Self.quote(value))")
    }
    mutating func add(_ key: String, _ value: Int) { parts.append("\(Self.quote(key)):\(value)") }
    mutating func add(_ key: String, _ value: Double) {
        parts.append("\(Self.quote(key)):\(value.isFinite ? String(value) : "null")")
    }
    mutating func add(_ key: String, _ value: Bool) { parts.append("\(Self.quote(key)):\(value)") }
    /// A pre-encoded JSON value (array or object).
    mutating func addRaw(_ key: String, _ json: String) { parts.append("\(Self.quote(key)):\(json)") }

    var text: String { "{" + parts.joined(separator: ",") + "}" }

    static func quote(_ s: String) -> String { JSONValue.quote(s) }
}
