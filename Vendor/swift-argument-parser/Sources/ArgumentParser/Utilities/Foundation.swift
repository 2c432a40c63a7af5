//===----------------------------------------------------------------------===//
//
// This source file is part of the Swift Argument Parser open source project
//
// Copyright (c) 2025 Apple Inc. and the Swift project authors
// Licensed under Apache License v2.0 with Runtime Library Exception
//
// See https://swift.org/LICENSE.txt for license information
//
//===----------------------------------------------------------------------===//

// lvbnode patch (the only change to the vendored sources; see ../../../README.md):
// upstream imports FoundationEssentials here for two things, LocalizedError and
// JSONEncoder, and that one import links about 6 MB of Foundation, regex and
// collection code into a static executable. Without it:
//
// - `describe()` is `String(describing:)`, which upstream also uses for every
//   error that is not a LocalizedError. A program that does not import
//   Foundation has no LocalizedError to throw.
// - `JSONEncoder.encode` (used only by --experimental-dump-help) is a small
//   encoder below whose output is byte for byte what Foundation's JSONEncoder
//   writes with [.prettyPrinted, .sortedKeys]: two-space indent, `"key" : value`,
//   keys in code-point order, "/" escaped as "\/", control characters as \b \f
//   \n \r \t or \u00xx (lowercase hex), empty containers as "[\n\n<indent>]".

extension Error {
  func describe() -> String {
    String(describing: self)
  }
}

enum JSONEncoder {
  static func encode<T: Encodable>(_ value: T) -> String {
    let root = JSONNode()
    guard (try? value.encode(to: TreeEncoder(node: root, codingPath: []))) != nil
    else { return "" }
    var out = ""
    root.write(into: &out, indent: 0)
    return out
  }
}

/// One JSON value while it is being encoded: a literal (already quoted or
/// formatted), an array or an object. A node nothing was encoded into prints
/// as an empty object, as Foundation does for a nested value.
private final class JSONNode {
  var literal: String?
  var array: [JSONNode]?
  var object: [String: JSONNode]?

  init(literal: String? = nil) { self.literal = literal }

  func write(into out: inout String, indent: Int) {
    if let literal {
      out += literal
    } else if let array {
      out += "[\n"
      if array.isEmpty { out += "\n" }
      for (i, element) in array.enumerated() {
        out += String(repeating: "  ", count: indent + 1)
        element.write(into: &out, indent: indent + 1)
        out += i == array.count - 1 ? "\n" : ",\n"
      }
      out += String(repeating: "  ", count: indent) + "]"
    } else {
      let object = object ?? [:]
      out += "{\n"
      if object.isEmpty { out += "\n" }
      let keys = object.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
      for (i, key) in keys.enumerated() {
        out += String(repeating: "  ", count: indent + 1)
        out += JSONNode.quoted(key) + " : "
        object[key]!.write(into: &out, indent: indent + 1)
        out += i == keys.count - 1 ? "\n" : ",\n"
      }
      out += String(repeating: "  ", count: indent) + "}"
    }
  }

  static func quoted(_ string: String) -> String {
    var out = "\""
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "/": out += "\\/"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case "\u{8}": out += "\\b"
      case "\u{c}": out += "\\f"
      case _ where scalar.value < 0x20:
        let hex = String(scalar.value, radix: 16)
        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }

  static func number<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F) -> String {
    if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
      return String(Int64(value))
    }
    return value.description
  }
}

private struct TreeEncoder: Encoder {
  let node: JSONNode
  var codingPath: [any CodingKey]
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    if node.object == nil { node.object = [:] }
    return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
  }

  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    if node.array == nil { node.array = [] }
    return UnkeyedContainer(node: node, codingPath: codingPath)
  }

  func singleValueContainer() -> any SingleValueEncodingContainer {
    SingleValueContainer(node: node, codingPath: codingPath)
  }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let node: JSONNode
  var codingPath: [any CodingKey]

  private func put(_ literal: String, _ key: Key) { node.object![key.stringValue] = JSONNode(literal: literal) }

  mutating func encodeNil(forKey key: Key) throws { put("null", key) }
  mutating func encode(_ value: Bool, forKey key: Key) throws { put(value ? "true" : "false", key) }
  mutating func encode(_ value: String, forKey key: Key) throws { put(JSONNode.quoted(value), key) }
  mutating func encode(_ value: Double, forKey key: Key) throws { put(JSONNode.number(value), key) }
  mutating func encode(_ value: Float, forKey key: Key) throws { put(JSONNode.number(value), key) }
  mutating func encode(_ value: Int, forKey key: Key) throws { put(String(value), key) }
  mutating func encode(_ value: Int8, forKey key: Key) throws { put(String(value), key) }
  mutating func encode(_ value: Int16, forKey key: Key) throws { put(String(value), key) }
  mutating func encode(_ value: Int32, forKey key: Key) throws { put(String(value), key) }
  mutating func encode(_ value: Int64, forKey key: Key) throws { put(String(value), key) }
  mutating func encode(_ value: UInt, forKey key: Key) throws { put(String(value), key) }
  mutating func encode(_ value: UInt8, forKey key: Key) throws { put(String(value), key) }
  mutating func encode(_ value: UInt16, forKey key: Key) throws { put(String(value), key) }
  mutating func encode(_ value: UInt32, forKey key: Key) throws { put(String(value), key) }
  mutating func encode(_ value: UInt64, forKey key: Key) throws { put(String(value), key) }

  mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
    try value.encode(to: TreeEncoder(node: child(key), codingPath: codingPath + [key]))
  }

  mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy keyType: NestedKey.Type, forKey key: Key
  ) -> KeyedEncodingContainer<NestedKey> {
    TreeEncoder(node: child(key), codingPath: codingPath + [key]).container(keyedBy: keyType)
  }

  mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    TreeEncoder(node: child(key), codingPath: codingPath + [key]).unkeyedContainer()
  }

  mutating func superEncoder() -> any Encoder {
    let node = JSONNode()
    self.node.object!["super"] = node
    return TreeEncoder(node: node, codingPath: codingPath)
  }

  mutating func superEncoder(forKey key: Key) -> any Encoder {
    TreeEncoder(node: child(key), codingPath: codingPath + [key])
  }

  private func child(_ key: Key) -> JSONNode {
    let child = JSONNode()
    node.object![key.stringValue] = child
    return child
  }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
  let node: JSONNode
  var codingPath: [any CodingKey]
  var count: Int { node.array!.count }

  private struct Index: CodingKey {
    var intValue: Int?
    var stringValue: String { "Index \(intValue!)" }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
  }

  private func append(_ literal: String) { node.array!.append(JSONNode(literal: literal)) }

  mutating func encodeNil() throws { append("null") }
  mutating func encode(_ value: Bool) throws { append(value ? "true" : "false") }
  mutating func encode(_ value: String) throws { append(JSONNode.quoted(value)) }
  mutating func encode(_ value: Double) throws { append(JSONNode.number(value)) }
  mutating func encode(_ value: Float) throws { append(JSONNode.number(value)) }
  mutating func encode(_ value: Int) throws { append(String(value)) }
  mutating func encode(_ value: Int8) throws { append(String(value)) }
  mutating func encode(_ value: Int16) throws { append(String(value)) }
  mutating func encode(_ value: Int32) throws { append(String(value)) }
  mutating func encode(_ value: Int64) throws { append(String(value)) }
  mutating func encode(_ value: UInt) throws { append(String(value)) }
  mutating func encode(_ value: UInt8) throws { append(String(value)) }
  mutating func encode(_ value: UInt16) throws { append(String(value)) }
  mutating func encode(_ value: UInt32) throws { append(String(value)) }
  mutating func encode(_ value: UInt64) throws { append(String(value)) }

  mutating func encode<T: Encodable>(_ value: T) throws {
    let path = codingPath + [Index(intValue: count)]
    try value.encode(to: TreeEncoder(node: next(), codingPath: path))
  }

  mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy keyType: NestedKey.Type
  ) -> KeyedEncodingContainer<NestedKey> {
    let path = codingPath + [Index(intValue: count)]
    return TreeEncoder(node: next(), codingPath: path).container(keyedBy: keyType)
  }

  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    let path = codingPath + [Index(intValue: count)]
    return TreeEncoder(node: next(), codingPath: path).unkeyedContainer()
  }

  mutating func superEncoder() -> any Encoder {
    let path = codingPath + [Index(intValue: count)]
    return TreeEncoder(node: next(), codingPath: path)
  }

  private func next() -> JSONNode {
    let child = JSONNode()
    node.array!.append(child)
    return child
  }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
  let node: JSONNode
  var codingPath: [any CodingKey]

  private func set(_ literal: String) { node.literal = literal }

  mutating func encodeNil() throws { set("null") }
  mutating func encode(_ value: Bool) throws { set(value ? "true" : "false") }
  mutating func encode(_ value: String) throws { set(JSONNode.quoted(value)) }
  mutating func encode(_ value: Double) throws { set(JSONNode.number(value)) }
  mutating func encode(_ value: Float) throws { set(JSONNode.number(value)) }
  mutating func encode(_ value: Int) throws { set(String(value)) }
  mutating func encode(_ value: Int8) throws { set(String(value)) }
  mutating func encode(_ value: Int16) throws { set(String(value)) }
  mutating func encode(_ value: Int32) throws { set(String(value)) }
  mutating func encode(_ value: Int64) throws { set(String(value)) }
  mutating func encode(_ value: UInt) throws { set(String(value)) }
  mutating func encode(_ value: UInt8) throws { set(String(value)) }
  mutating func encode(_ value: UInt16) throws { set(String(value)) }
  mutating func encode(_ value: UInt32) throws { set(String(value)) }
  mutating func encode(_ value: UInt64) throws { set(String(value)) }

  mutating func encode<T: Encodable>(_ value: T) throws {
    try value.encode(to: TreeEncoder(node: node, codingPath: codingPath))
  }
}
