/// An HTTP request method: ``Resource/httpMethod``.
///
/// Named `RequestMethod`, not `HTTPMethod`, so that a file that also imports `NIOHTTP1` (which
/// `import Vapor` brings) or Alamofire, which both have an `HTTPMethod`, needs no module prefix.
/// The seeds' other names are kept: where `Authenticator` or `AuthenticationCredential` meet
/// Alamofire's, write `AuthenticatedRequests.Authenticator`.
public struct RequestMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
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
    public static let get: RequestMethod = "GET"
    /// `POST`
    public static let post: RequestMethod = "POST"
    /// `PUT`
    public static let put: RequestMethod = "PUT"
    /// `PATCH`
    public static let patch: RequestMethod = "PATCH"
    /// `DELETE`
    public static let delete: RequestMethod = "DELETE"
    /// `HEAD`
    public static let head: RequestMethod = "HEAD"
    /// `OPTIONS`
    public static let options: RequestMethod = "OPTIONS"
}
