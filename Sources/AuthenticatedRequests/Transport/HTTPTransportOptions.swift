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
    package func check(_ body: Data, of response: ResponseHead, for request: URLRequest) throws {
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

extension TimeInterval {
    /// `30` or `0.5`: seconds for messages.
    var formattedSeconds: String {
        guard isFinite else { return "\(self)" }
        return self == rounded() && Swift.abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
