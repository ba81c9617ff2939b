/// A strict JSON parser (RFC 8259) for replies from servers: one pass over the bytes, so its time
/// is linear in the input's size, with bounded nesting.
///
/// It accepts exactly RFC 8259's grammar in UTF-8: no comments, no trailing commas, no leading
/// zeros, no bare `NaN` or `Infinity`. It rejects, with a ``JSONParsingError`` naming the byte
/// offset:
/// - nesting deeper than the limit (arrays and objects; 32 unless given);
/// - a number that is not finite as a `Double` (`1e400`);
/// - invalid UTF-8, control characters in strings, and escapes of lone surrogates;
/// - an object that names a member twice (a reply that says two things at once is not trusted).
///
/// `JSONDecoder` into a recursive `Decodable` enum cannot do this: it has to guess the type by
/// failed attempts, which costs time on every level of nesting.
struct JSONParser {
    private let bytes: UnsafeRawBufferPointer
    private let maximumDepth: Int
    private var index = 0
    private var depth = 0

    init(bytes: UnsafeRawBufferPointer, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    /// Parses the whole input as one value; anything but whitespace after it is an error.
    mutating func parseDocument() throws(JSONParsingError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw error("unexpected data after the value") }
        return value
    }

    private func error(_ reason: String) -> JSONParsingError {
        JSONParsingError(reason: reason, offset: index)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONParsingError) -> JSONValue {
        guard let byte = current else { throw error("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try parseNumber())
        default:
            throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParsingError) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw error("unexpected end of input") }
        let pointer = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != pointer[offset] {
            throw error("invalid literal")
        }
        index += count
    }

    private mutating func enterContainer() throws(JSONParsingError) {
        depth += 1
        guard depth <= maximumDepth else {
            throw error("nesting deeper than \(maximumDepth) levels")
        }
        index += 1
    }

    private mutating func parseArray() throws(JSONParsingError) -> JSONValue {
        try enterContainer()
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(elements)
            case nil: throw error("unexpected end of input in an array")
            default: throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func parseObject() throws(JSONParsingError) -> JSONValue {
        try enterContainer()
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let nameOffset = index
            let name = try parseString()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            guard members.updateValue(value, forKey: name) == nil else {
                throw JSONParsingError(reason: "a member name appears twice", offset: nameOffset)
            }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return .object(members)
            case nil: throw error("unexpected end of input in an object")
            default: throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func parseString() throws(JSONParsingError) -> String {
        index += 1  // the opening quote
        let start = index
        // Fast path: a run without escapes is one slice.
        var isASCII = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return try makeString(slice, isASCII: isASCII, at: start)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("a control character in a string") }
            if byte >= 0x80 { isASCII = false }
            index += 1
        }
        guard index < bytes.count else { throw error("unexpected end of input in a string") }
        // Slow path: decode escapes into a buffer of UTF-8.
        var buffer = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                if isASCII { return String(decoding: buffer, as: UTF8.self) }
                guard let string = String(validating: buffer, as: UTF8.self) else {
                    throw JSONParsingError(reason: "a string is not valid UTF-8", offset: start)
                }
                return string
            case UInt8(ascii: "\\"):
                index += 1
                try appendEscape(to: &buffer)
            case 0..<0x20:
                throw error("a control character in a string")
            default:
                if byte >= 0x80 { isASCII = false }
                buffer.append(byte)
                index += 1
            }
        }
        throw error("unexpected end of input in a string")
    }

    private func makeString(
        _ utf8: UnsafeRawBufferPointer,
        isASCII: Bool,
        at offset: Int
    ) throws(JSONParsingError) -> String {
        if isASCII { return String(decoding: utf8, as: UTF8.self) }
        guard let string = String(validating: utf8, as: UTF8.self) else {
            throw JSONParsingError(reason: "a string is not valid UTF-8", offset: offset)
        }
        return string
    }

    private mutating func appendEscape(to buffer: inout [UInt8]) throws(JSONParsingError) {
        guard let byte = current else { throw error("unexpected end of input in an escape") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(byte)
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try readHex4())
            if (0xD800...0xDBFF).contains(scalar) {
                guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { throw error("a high surrogate without its low surrogate") }
                index += 2
                let low = UInt32(try readHex4())
                guard (0xDC00...0xDFFF).contains(low) else { throw error("a high surrogate without its low surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw error("a lone low surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw error("an invalid code point") }
            UTF8.encode(unicode) { buffer.append($0) }
        default:
            throw error("an invalid escape")
        }
    }

    private mutating func readHex4() throws(JSONParsingError) -> UInt16 {
        guard bytes.count - index >= 4 else { throw error("unexpected end of input in a \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("an invalid \\u escape")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(JSONParsingError) -> Double {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, isDigit(first) else { throw error("a number without digits") }
        if first == UInt8(ascii: "0") {
            index += 1
            if let next = current, isDigit(next) { throw error("a number with a leading zero") }
        } else {
            skipDigits()
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard let next = current, isDigit(next) else { throw error("a fraction without digits") }
            skipDigits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard let next = current, isDigit(next) else { throw error("an exponent without digits") }
            skipDigits()
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONParsingError(reason: "a number out of range", offset: start)
        }
        return value
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func skipDigits() {
        while let byte = current, isDigit(byte) { index += 1 }
    }
}

/// Why bytes are not acceptable JSON; see ``JSONValue/init(parsing:maximumDepth:)``.
public struct JSONParsingError: Error, Hashable, CustomStringConvertible {
    /// What is wrong, e.g. "nesting deeper than 32 levels".
    public let reason: String
    /// The byte offset where it was found.
    public let offset: Int

    /// Creates an error.
    public init(reason: String, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    /// `JSONParsingError: reason at byte offset`.
    public var description: String { "JSONParsingError: \(reason) at byte \(offset)" }
}
