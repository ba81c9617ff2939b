import Foundation

/// A JSON value, for the fields of a server's response that this package does not model.
///
/// Replies from servers are read with ``init(parsing:maximumDepth:)``, which is linear in the
/// input's size and bounds nesting. The `Decodable` conformance (used for stored credentials)
/// bounds nesting too.
public enum JSONValue: Codable, Hashable, Sendable {
    /// A string.
    case string(String)
    /// A finite number.
    case number(Double)
    /// `true` or `false`.
    case bool(Bool)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])
    /// `null`.
    case null

    /// The deepest nesting of arrays and objects accepted by default: 32 levels.
    public static let defaultMaximumDepth = 32

    /// Parses `data` as one JSON value (RFC 8259), strictly, in time linear in its size.
    ///
    /// - Throws: ``JSONParsingError`` for anything that is not exactly one JSON value, for
    ///   nesting deeper than `maximumDepth`, for numbers beyond `Double`'s range, invalid UTF-8
    ///   or lone surrogates, and for objects that name a member twice.
    public init(parsing data: Data, maximumDepth: Int = defaultMaximumDepth) throws(JSONParsingError) {
        let result = data.withUnsafeBytes { bytes -> Result<JSONValue, JSONParsingError> in
            var parser = JSONParser(bytes: bytes, maximumDepth: maximumDepth)
            do throws(JSONParsingError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    /// Decodes any JSON value, at most ``defaultMaximumDepth`` levels below the decoder's top.
    public init(from decoder: any Decoder) throws {
        guard decoder.codingPath.count <= Self.defaultMaximumDepth + 8 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "JSON nested too deeply.")
            )
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            guard value.isFinite else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: decoder.codingPath, debugDescription: "A number is not finite.")
                )
            }
            self = .number(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            self = .array(try container.decode([JSONValue].self))
        }
    }

    /// Encodes the value as JSON.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number, if this is a number or a string holding one (which may then be any `Double`,
    /// including `nan` or `inf`: check it before use).
    public var doubleValue: Double? {
        switch self {
        case .number(let value): return value
        case .string(let value): return Double(value.trimmingCharacters(in: .whitespaces))
        default: return nil
        }
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

extension JSONValue {
    /// Appends every string of at least `minimumLength` characters in this value, depth first.
    func collectStrings(minimumLength: Int, into strings: inout [String]) {
        switch self {
        case .string(let value) where value.count >= minimumLength: strings.append(value)
        case .array(let values):
            for value in values { value.collectStrings(minimumLength: minimumLength, into: &strings) }
        case .object(let values):
            for value in values.values { value.collectStrings(minimumLength: minimumLength, into: &strings) }
        default: break
        }
    }
}
