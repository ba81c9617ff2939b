import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How one request is sent: whether redirects are followed, how long the whole exchange may take,
/// and how large a body is accepted. See ``HTTPTransport/send(_:options:)``.
public struct HTTPTransportOptions: Sendable, Hashable {
    /// Whether a `3xx` reply is followed. `false` for every request that carries a secret in its
    /// body (token, device authorization, revocation, introspection): a redirect then comes back
    /// as the `3xx` reply, and the body is never sent to the redirect's target.
    public var followsRedirects: Bool
    /// The total deadline in seconds, covering connect, headers and the whole body; `nil` for
    /// the transport's own timeouts only.
    public var timeout: TimeInterval?
    /// The largest response body accepted, in bytes; `nil` for no limit beyond the transport's.
    public var maximumResponseSize: Int?

    /// Creates options.
    public init(followsRedirects: Bool = true, timeout: TimeInterval? = nil, maximumResponseSize: Int? = nil) {
        self.followsRedirects = followsRedirects
        self.timeout = timeout
        self.maximumResponseSize = maximumResponseSize
    }

    /// Follows redirects, no deadline or size cap beyond the transport's: what ``HTTPTransport/send(_:)`` does.
    public static let `default` = HTTPTransportOptions()

    /// The largest reply accepted from an authorization server: 1 MiB.
    public static let authorizationServerResponseLimit = 1 << 20

    /// The default deadline for one exchange with an authorization server: 30 seconds.
    public static let defaultAuthorizationServerTimeout: TimeInterval = 30

    /// For requests to an authorization server: no redirects, a total deadline of `timeout`
    /// seconds, and at most 1 MiB of reply.
    public static func authorizationServer(
        timeout: TimeInterval = defaultAuthorizationServerTimeout
    ) -> HTTPTransportOptions {
        HTTPTransportOptions(
            followsRedirects: false,
            timeout: timeout,
            maximumResponseSize: authorizationServerResponseLimit
        )
    }

    /// Checks a reply against the size cap, and against the redirect rule by its URL: a reply from
    /// another URL means the transport followed a redirect.
    package func check(_ body: Data, of response: HTTPURLResponse, for request: URLRequest) throws {
        if let maximumResponseSize, body.count > maximumResponseSize {
            throw HTTPTransportError.responseTooLarge(limit: maximumResponseSize, url: request.url)
        }
        if !followsRedirects, let requested = request.url, let answered = response.url,
            requested.absoluteString != answered.absoluteString
        {
            throw HTTPTransportError.redirected(status: nil, from: requested, to: answered)
        }
    }
}

/// Why a transport gave up on a request under ``HTTPTransportOptions``.
///
/// Switch on ``code``; the set of codes can grow.
public struct HTTPTransportError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The deadline passed before the whole reply arrived; the request was cancelled.
        public static let timedOut = Code("timed out")
        /// The reply's body is larger than allowed.
        public static let responseTooLarge = Code("response too large")
        /// The server answered with a redirect where none may be followed.
        public static let redirected = Code("redirected")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// What happened, for people; names URLs without query, never a secret.
    public let message: String
    /// The redirect's status, for ``Code/redirected`` when known.
    public let statusCode: Int?
    /// The origin the redirect pointed to, for ``Code/redirected`` (scheme, host, port).
    public let redirectOrigin: String?

    init(code: Code, message: String, statusCode: Int? = nil, redirectOrigin: String? = nil) {
        self.code = code
        self.message = message
        self.statusCode = statusCode
        self.redirectOrigin = redirectOrigin
    }

    package static func timedOut(after seconds: TimeInterval, url: URL?) -> HTTPTransportError {
        HTTPTransportError(
            code: .timedOut,
            message: "No complete reply from \(url?.redactedForDisplay ?? "the server") within "
                + "\(seconds.formattedSeconds) seconds; the request was cancelled."
        )
    }

    package static func responseTooLarge(limit: Int, url: URL?) -> HTTPTransportError {
        HTTPTransportError(
            code: .responseTooLarge,
            message: "The reply from \(url?.redactedForDisplay ?? "the server") is larger than \(limit) bytes."
        )
    }

    /// The error for a redirect that must not be followed.
    package static func redirected(status: Int?, from request: URL, to target: URL?) -> HTTPTransportError {
        let origin = target.flatMap(Origin.init).map(\.display)
        var message = "\(request.redactedForDisplay) answered with a redirect"
        if let status { message += " (status \(status))" }
        message += " to \(origin ?? "an unknown place"); requests that carry a secret never follow redirects."
        return HTTPTransportError(code: .redirected, message: message, statusCode: status, redirectOrigin: origin)
    }

    /// `HTTPTransportError(code): message`.
    public var description: String { "HTTPTransportError(\(code)): \(message)" }

    /// Same as ``description``.
    public var debugDescription: String { description }
}

extension TimeInterval {
    /// `30` or `0.5`: seconds for messages.
    var formattedSeconds: String {
        guard isFinite else { return "\(self)" }
        return self == rounded() && Swift.abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
