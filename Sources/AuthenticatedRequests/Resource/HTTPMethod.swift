/// An HTTP request method.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
    /// The method's name as sent on the wire, e.g. `GET`.
    public let rawValue: String

    /// Creates a method from its wire name.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Creates a method from a string literal, e.g. `"PROPFIND"`.
    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }

    /// `GET`
    public static let get: HTTPMethod = "GET"
    /// `POST`
    public static let post: HTTPMethod = "POST"
    /// `PUT`
    public static let put: HTTPMethod = "PUT"
    /// `PATCH`
    public static let patch: HTTPMethod = "PATCH"
    /// `DELETE`
    public static let delete: HTTPMethod = "DELETE"
    /// `HEAD`
    public static let head: HTTPMethod = "HEAD"
    /// `OPTIONS`
    public static let options: HTTPMethod = "OPTIONS"
}
