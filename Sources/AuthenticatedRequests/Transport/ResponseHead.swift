import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What an ``HTTPTransport`` returns next to the body: the status code, the header fields in the
/// order they arrived, and the URL the response came from.
///
/// It is what resources, authenticators and challenges read (`WWW-Authenticate`, `DPoP-Nonce`,
/// `Retry-After`). A transport builds it from what its HTTP client gives, without Foundation's
/// `HTTPURLResponse`, which costs far more to build on Linux. Where an API wants an
/// `HTTPURLResponse`, ``httpURLResponse`` builds one when asked (and gives back the one a
/// transport started from, such as `URLSessionTransport`'s, at no cost).
///
/// ```swift
/// let head = ResponseHead(statusCode: 401, url: url, headerFields: [("WWW-Authenticate", "Bearer")])
/// head.value(forHTTPHeaderField: "www-authenticate")  // "Bearer"
/// ```
public struct ResponseHead: Sendable, CustomStringConvertible {
    /// The status code.
    public let statusCode: Int
    /// The URL the response came from (after any redirect the transport followed).
    public let url: URL?
    /// The fields, or the `HTTPURLResponse` they are read from (`URLSessionTransport`'s, read
    /// only when asked, so that path costs what it cost before).
    private let storage: Storage

    private enum Storage: Sendable {
        case fields(HeaderFields)
        case foundation(FoundationResponse)
    }

    /// Creates a head.
    ///
    /// - Parameters:
    ///   - statusCode: The status code.
    ///   - url: The URL the response came from.
    ///   - headerFields: The header fields, in order.
    public init(statusCode: Int, url: URL?, headerFields: HeaderFields = []) {
        self.statusCode = statusCode
        self.url = url
        self.storage = .fields(headerFields)
    }

    /// The head of `response`, whose fields are read from it when asked; ``httpURLResponse``
    /// gives `response` back.
    public init(_ response: HTTPURLResponse) {
        statusCode = response.statusCode
        url = response.url
        storage = .foundation(FoundationResponse(response))
    }

    /// The header fields, in the order they arrived, repeated ones included. (For a head made
    /// from an `HTTPURLResponse`: its fields, in the order Foundation gives them, repeated ones
    /// already joined.)
    public var headerFields: HeaderFields {
        switch storage {
        case .fields(let fields):
            return fields
        case .foundation(let foundation):
            var fields = HeaderFields()
            for (name, value) in foundation.response.allHeaderFields {
                fields.append(name: "\(name)", value: "\(value)")
            }
            return fields
        }
    }

    /// The value of the header field `name` (compared without regard to case); repeated fields
    /// joined with `", "`, as `HTTPURLResponse.value(forHTTPHeaderField:)` joins them. `nil`
    /// when there is none.
    public func value(forHTTPHeaderField name: String) -> String? {
        switch storage {
        case .fields(let fields): fields[name]
        case .foundation(let foundation): foundation.response.value(forHTTPHeaderField: name)
        }
    }

    /// The response as Foundation's `HTTPURLResponse`: the transport's own when it started from
    /// one (free), else built when asked (HTTP/1.1, these header fields, repeated ones joined with
    /// `", "`), so keep it when you need it more than once. `nil` only for a head without a URL.
    public var httpURLResponse: HTTPURLResponse? {
        switch storage {
        case .foundation(let foundation):
            return foundation.response
        case .fields(let fields):
            guard let url else { return nil }
            return Self.makeHTTPURLResponse(statusCode: statusCode, url: url, headerFields: fields)
        }
    }

    static func makeHTTPURLResponse(statusCode: Int, url: URL, headerFields: HeaderFields) -> HTTPURLResponse? {
        var joined: [String: String] = [:]
        var names: [String: String] = [:]  // lowercased -> the first spelling seen
        for field in headerFields {
            let key = field.name.lowercased()
            let name = names[key] ?? field.name
            names[key] = name
            joined[name] = joined[name].map { "\($0), \(field.value)" } ?? field.value
        }
        return HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: "HTTP/1.1", headerFields: joined)
    }

    /// `<status> <url>`.
    public var description: String {
        "\(statusCode) \(url?.redactedForDisplay ?? "(no URL)")"
    }
}

/// The `HTTPURLResponse` a ``ResponseHead`` came from; a class so that copies of the head share it.
///
/// `@unchecked Sendable`: its one stored property is immutable, and `HTTPURLResponse` is itself
/// immutable once made (Foundation declares it `Sendable`).
private final class FoundationResponse: @unchecked Sendable {
    let response: HTTPURLResponse
    init(_ response: HTTPURLResponse) { self.response = response }
}

/// The header fields of a response, in the order they arrived, looked up by name without regard to
/// case. Cheap to build: an array of name and value pairs.
public struct HeaderFields: Sendable, Sequence, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// One field.
    public struct Field: Sendable, Equatable {
        /// The name as it arrived.
        public var name: String
        /// The value.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var fields: [Field]

    /// No fields.
    public init() { fields = [] }

    /// `fields`, in order.
    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { Field(name: $0.0, value: $0.1) }
    }

    /// `fields`, in order.
    public init(arrayLiteral fields: (String, String)...) {
        self.init(fields)
    }

    /// The fields of a dictionary, in the order of their names (a dictionary has no order of its own).
    public init(_ dictionary: [String: String]) {
        self.fields = dictionary.sorted { $0.key < $1.key }.map { Field(name: $0.key, value: $0.value) }
    }

    /// Makes room for `count` fields, for a transport that knows how many it will append.
    public mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    /// Adds a field at the end.
    public mutating func append(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// The value of `name`, repeated fields joined with `", "`; `nil` when there is none.
    public subscript(name: String) -> String? {
        var result: String?
        for field in fields where Self.equalIgnoringCase(field.name, name) {
            result = result.map { "\($0), \(field.value)" } ?? field.value
        }
        return result
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.equalIgnoringCase($0.name, name) }.map(\.value)
    }

    /// How many fields there are.
    public var count: Int { fields.count }

    /// The fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// ASCII case-insensitive equality, without allocating (header names are ASCII tokens).
    static func equalIgnoringCase(_ left: String, _ right: String) -> Bool {
        var left = left
        var right = right
        return left.withUTF8 { a in
            right.withUTF8 { b in
                guard a.count == b.count else { return false }
                for index in 0..<a.count where a[index] != b[index] {
                    guard a[index] | 0x20 == b[index] | 0x20, (a[index] | 0x20) >= 0x61, (a[index] | 0x20) <= 0x7A
                    else { return false }
                }
                return true
            }
        }
    }

    /// `name: value` lines; values of `Authorization`, `Cookie`, `Set-Cookie` and `DPoP` withheld.
    public var description: String {
        fields.map { field in
            let secret = ["authorization", "cookie", "set-cookie", "dpop", "proxy-authorization"].contains {
                Self.equalIgnoringCase($0, field.name)
            }
            return "\(field.name): \(secret ? "<redacted>" : field.value)"
        }.joined(separator: "\n")
    }
}
