import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A credential that an ``Authenticator`` applies to requests.
///
/// It is `Codable` so that a ``TokenStore`` can keep it across launches.
public protocol AuthenticationCredential: Codable, Sendable {
    /// The values of this credential that are secrets: they are removed from every error and
    /// description built from a response to a request it authenticated (a server may echo
    /// them). The default is every string of 16 characters or more in the credential's `Codable`
    /// encoding; ``OAuthToken`` names its access, refresh and ID tokens.
    var secretValues: [String] { get }

    /// Whether the credential must be refreshed before it is used at `date`.
    ///
    /// The ``AuthenticationInterceptor`` asks with `now + leeway`, so a credential that
    /// expires within the leeway is refreshed before a request goes out.
    func requiresRefresh(at date: Date) -> Bool

    /// Whether the credential must be refreshed before a request sent at `now`, given the
    /// interceptor's leeway. The default is `requiresRefresh(at: now + leeway)`; a credential that
    /// knows its lifetime can use less leeway for short-lived credentials (``OAuthToken`` does).
    func requiresRefresh(now: Date, leeway: TimeInterval) -> Bool
}

extension AuthenticationCredential {
    /// Every string of 16 characters or more in the credential's `Codable` encoding.
    public var secretValues: [String] {
        guard let data = try? JSONEncoder().encode(self), let value = try? JSONValue(parsing: data) else {
            return []
        }
        var strings: [String] = []
        value.collectStrings(minimumLength: 16, into: &strings)
        return strings
    }

    /// `requiresRefresh(at: now + leeway)`.
    public func requiresRefresh(now: Date, leeway: TimeInterval) -> Bool {
        requiresRefresh(at: now.addingTimeInterval(leeway))
    }

    /// Whether the credential must be refreshed before it is used now (no leeway).
    public var requiresRefresh: Bool { requiresRefresh(at: Date()) }
}

/// The strategy for one authentication scheme: how a credential is applied, refreshed, and
/// recognised as rejected. The ``AuthenticationInterceptor`` runs the lifecycle around it.
///
/// ``BearerTokenAuthenticator`` is the OAuth 2.0 implementation. Conform your own type to plug in
/// another scheme (an API key that rotates, a signed-request scheme):
///
/// ```swift
/// final class SessionKeyAuthenticator: Authenticator {
///     func apply(_ credential: SessionKey, to urlRequest: inout URLRequest) {
///         urlRequest.setValue(credential.key, forHTTPHeaderField: "X-Session-Key")
///     }
///     func refresh(_ credential: SessionKey, for context: AuthenticationContext) async throws -> SessionKey {
///         try await SessionKeyEndpoint(transport: context.transport).request(using: credential)
///     }
/// }
/// ```
public protocol Authenticator: AnyObject, Sendable {
    /// The credential this scheme applies.
    associatedtype Credential: AuthenticationCredential

    /// Applies `credential` to `urlRequest`, e.g. as an `Authorization` header.
    func apply(_ credential: Credential, to urlRequest: inout URLRequest)

    /// Applies `credential` to `urlRequest` where applying may wait or fail, e.g. a DPoP proof
    /// signed with a key that may have to be loaded first. The ``AuthenticationInterceptor`` calls
    /// this for every request. The default calls ``apply(_:to:)``.
    func authorize(_ urlRequest: inout URLRequest, with credential: Credential) async throws

    /// Whether to send `urlRequest` once more, with the same credential applied afresh and without
    /// a refresh, after `response`: a DPoP server that asks for its nonce (RFC 9449 §8, §9).
    /// Called with every response before anything else looks at it, so an authenticator can
    /// remember what the server said. Each attempt is resent at most once. The default is `false`.
    func shouldResend(_ urlRequest: URLRequest, after response: ResponseHead) -> Bool

    /// Returns a fresh credential in place of `credential`.
    ///
    /// Called before a request when the credential ``AuthenticationCredential/requiresRefresh(at:)``,
    /// and after a response that ``didRequest(_:with:failDueToAuthenticationError:)`` classifies as
    /// an authentication failure. Concurrent needs share one call.
    func refresh(_ credential: Credential, for context: AuthenticationContext) async throws -> Credential

    /// Whether `response` to `urlRequest` failed because the credential was rejected.
    ///
    /// Asked only for responses outside `200...299`; `error` is what really happened: a
    /// ``ResourceError`` with code ``ResourceError/Code/unacceptableStatus`` carrying the
    /// response, the request's method and URL. A success is never classified, so a 2xx never
    /// costs a refresh. The default is `true` for status 401.
    func didRequest(
        _ urlRequest: URLRequest,
        with response: ResponseHead,
        failDueToAuthenticationError error: any Error
    ) -> Bool

    /// Whether `urlRequest` carries `credential`. When a rejected request carried an older
    /// credential than the current one, it is retried with the current one, without a refresh.
    /// The default is `true`.
    ///
    /// May be asked more than once for one rejected request: before it waits for a refresh, and
    /// again after a refresh shared with other requests ended, or a sign-out cleared the
    /// credential. Keep it cheap and free of side effects.
    func isRequest(_ urlRequest: URLRequest, authenticatedWith credential: Credential) -> Bool

    /// Whether `fresh`, handed over by a refresh, would send the same token as `rejected`, the
    /// credential the server just refused on `urlRequest` (a refresh that returned the rejected
    /// token with only another expiry, say). Such a credential is never used for the retry:
    /// another refresh follows, within the ``RefreshLimit``.
    ///
    /// The default applies each credential to `urlRequest` (``apply(_:to:)``) and compares what
    /// would go on the wire: the URL, every header field and the body. The OAuth authenticator
    /// compares the access tokens.
    func carriesSameToken(_ fresh: Credential, as rejected: Credential, on urlRequest: URLRequest) -> Bool

    /// A first credential when there is none (e.g. running the client credentials grant).
    /// The default is `nil`: without a credential, requests fail with
    /// ``AuthenticationError/Code/missingCredential``.
    func initialCredential(for context: AuthenticationContext) async throws -> Credential?

    /// How long a process waits for a first credential that another process sharing the store is
    /// obtaining, for a credential that asks a person (one approval for every process): with a
    /// value, processes obtain a first credential one at a time under the entry's refresh lock,
    /// the first obtains it and stores it, the others adopt it; when the first is refused by the
    /// server (an ``OAuthError``, e.g. the user denied), those waiting meanwhile fail with the same
    /// error instead of asking again. The default is `nil`: each process obtains its own, without
    /// a lock (what suits a grant without a person, or one whose waiting is cheap).
    var initialCredentialLockTimeout: TimeInterval? { get }

    /// Whether `error`, thrown by ``refresh(_:for:)``, means the credential can never be
    /// refreshed again (for OAuth, `invalid_grant`). The credential is then cleared from memory
    /// and from the store. The default is `false`: the credential is kept.
    func isCredentialInvalidated(by error: any Error) -> Bool

    /// Whether a credential of this authenticator may be applied to a request for `url`. When
    /// `false`, the ``AuthenticationInterceptor`` sends nothing, obtains and refreshes nothing, and
    /// fails with ``AuthenticationError/Code/foreignResource``. The OAuth authenticator answers
    /// from its flow's ``OAuthFlow/resourceBoundary``. The default is `true`.
    func canAuthenticate(_ url: URL) -> Bool

    /// The error for a request that was rejected again after its one refresh and retry, instead
    /// of the response; `nil` passes the response on. The OAuth authenticator names a resource
    /// that still asks for a step-up (``StepUpError/Code/refusedAfterStepUp``). The default is
    /// `nil`.
    func errorForRejectedRetry(_ urlRequest: URLRequest, response: ResponseHead) -> (any Error)?

    /// Whether `credential` may go out over `transport` as it is. `false` makes the engine refresh
    /// it first (shared with every concurrent request, like any refresh) and send the refreshed
    /// one, or fail with ``AuthenticationError/Code/certificateMismatch`` when the refreshed one
    /// may not go either. The OAuth authenticator answers `false` for a token bound to a client
    /// certificate (``OAuthToken/certificateThumbprint``) that `transport` does not present: the
    /// certificate was rotated since. The default is `true`.
    ///
    /// - Throws: when the transport cannot tell which certificate it presents (its files cannot
    ///   be read); the request fails with that error and nothing is sent.
    func canSend(_ credential: Credential, over transport: any HTTPTransport) throws -> Bool
}

extension Authenticator {
    /// Calls ``apply(_:to:)``.
    public func authorize(_ urlRequest: inout URLRequest, with credential: Credential) async throws {
        apply(credential, to: &urlRequest)
    }

    /// `false`.
    public func shouldResend(_ urlRequest: URLRequest, after response: ResponseHead) -> Bool {
        false
    }

    /// `true` for status 401.
    public func didRequest(
        _ urlRequest: URLRequest,
        with response: ResponseHead,
        failDueToAuthenticationError error: any Error
    ) -> Bool {
        response.statusCode == 401
    }

    /// `true`.
    public func isRequest(_ urlRequest: URLRequest, authenticatedWith credential: Credential) -> Bool {
        true
    }

    /// Whether ``apply(_:to:)`` makes the same request with either credential, applied to a
    /// request with `urlRequest`'s URL and method and nothing else: the same URL, header fields
    /// and body. A credential that adds nothing to the request is the
    /// same only when its stored form is the same.
    public func carriesSameToken(_ fresh: Credential, as rejected: Credential, on urlRequest: URLRequest) -> Bool {
        // A request to the same URL with nothing else: the rejected one already carries a credential.
        var bare = URLRequest(url: urlRequest.url ?? URL(fileURLWithPath: "/"))
        bare.httpMethod = urlRequest.httpMethod
        var withFresh = bare
        var withRejected = bare
        apply(fresh, to: &withFresh)
        apply(rejected, to: &withRejected)
        // Compared field by field: `URLRequest`'s own `==` differs between platforms.
        func wire(_ request: URLRequest) -> [String] {
            [request.url?.absoluteString ?? "", request.httpBody.map { $0.base64EncodedString() } ?? ""]
                + (request.allHTTPHeaderFields ?? [:]).map { "\($0.key.lowercased()): \($0.value)" }.sorted()
        }
        let (fromFresh, fromRejected) = (wire(withFresh), wire(withRejected))
        guard fromFresh != wire(bare) || fromRejected != wire(bare) else {
            return AuthenticationInterceptor<Self>.sameStoredForm(fresh, rejected)
        }
        return fromFresh == fromRejected
    }

    /// `nil`.
    public func initialCredential(for context: AuthenticationContext) async throws -> Credential? {
        nil
    }

    /// `nil`: each process obtains its own first credential.
    public var initialCredentialLockTimeout: TimeInterval? { nil }

    /// `false`.
    public func isCredentialInvalidated(by error: any Error) -> Bool {
        false
    }

    /// `true`.
    public func canAuthenticate(_ url: URL) -> Bool {
        true
    }

    /// `nil`.
    public func errorForRejectedRetry(_ urlRequest: URLRequest, response: ResponseHead) -> (any Error)? {
        nil
    }

    /// `true`.
    public func canSend(_ credential: Credential, over transport: any HTTPTransport) throws -> Bool {
        true
    }
}

/// What an ``Authenticator`` may use while it refreshes: the transport for the token endpoint
/// and the clock that stamps credentials.
public struct AuthenticationContext: Sendable {
    /// The transport for requests to the authorization server.
    public let transport: any HTTPTransport
    /// The clock; expiry dates are computed from it.
    public let clock: any WallClock
    /// Whether secrets may be sent over plain `http` to hosts other than loopback.
    public let allowsInsecureHTTP: Bool
    /// The total deadline of each request to the authorization server, in seconds (connect,
    /// headers and the whole body); 30 unless given.
    public let timeout: TimeInterval
    /// Proof of possession for token requests (DPoP); `nil` for bearer tokens.
    public let proofOfPossession: (any ProofOfPossession)?

    /// Creates a context.
    public init(
        transport: any HTTPTransport,
        clock: any WallClock = SystemWallClock(),
        allowsInsecureHTTP: Bool = false,
        timeout: TimeInterval = HTTPTransportOptions.defaultAuthorizationServerTimeout,
        proofOfPossession: (any ProofOfPossession)? = nil
    ) {
        self.transport = transport
        self.clock = clock
        self.allowsInsecureHTTP = allowsInsecureHTTP
        self.timeout = timeout
        self.proofOfPossession = proofOfPossession
    }

    /// This context with `proofOfPossession` for token requests.
    public func with(proofOfPossession: (any ProofOfPossession)?) -> AuthenticationContext {
        AuthenticationContext(
            transport: transport, clock: clock, allowsInsecureHTTP: allowsInsecureHTTP, timeout: timeout,
            proofOfPossession: proofOfPossession)
    }

    /// The options for a request to the authorization server: no redirects, ``timeout``, 1 MiB.
    public var authorizationServerOptions: HTTPTransportOptions {
        .authorizationServer(timeout: timeout)
    }
}

/// Sends requests with a credential applied. ``AuthenticatedResource`` names one.
public protocol RequestAuthenticator: Sendable {
    /// Applies a credential to `request`, sends it over `transport`, and handles refresh and
    /// retry; returns the final reply.
    /// `request` is `consuming` so the credential header can be added without cloning it.
    func send(_ request: consuming URLRequest, over transport: any HTTPTransport) async throws -> (
        Data, ResponseHead
    )

    /// The transport of this client: what an ``AuthenticatedResource`` that names no transport of
    /// its own sends with. ``URLSessionTransport/shared`` unless the authenticator says otherwise;
    /// an ``AuthenticationInterceptor`` uses its ``AuthenticationInterceptor/Configuration/tokenTransport``,
    /// so one setting serves tokens, discovery (through its `context`) and resources.
    var transport: any HTTPTransport { get }
}

extension RequestAuthenticator {
    /// ``URLSessionTransport/shared``.
    public var transport: any HTTPTransport { URLSessionTransport.shared }
}
