import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The OAuth 2.0 bearer token scheme (RFC 6750) as an ``Authenticator``: applies
/// `Authorization: Bearer <token>` and refreshes through an ``OAuthFlow``.
public final class BearerTokenAuthenticator: Authenticator {
    /// The flow that obtains and refreshes tokens.
    public let flow: any OAuthFlow

    /// Creates an authenticator for `flow`.
    public init(flow: any OAuthFlow) {
        self.flow = flow
    }

    /// Sets `Authorization: Bearer <access token>` (the scheme spelled `Bearer` whatever the
    /// server's casing); another token type is applied under its own name.
    public func apply(_ credential: OAuthToken, to urlRequest: inout URLRequest) {
        urlRequest.setAuthorization(Self.authorization(for: credential))
    }

    /// Refreshes through the flow.
    public func refresh(_ credential: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        try await flow.refresh(credential, for: context)
    }

    /// Obtains a first token through the flow.
    public func initialCredential(for context: AuthenticationContext) async throws -> OAuthToken? {
        try await flow.obtainToken(for: context)
    }

    /// `true` for a 401 whose `WWW-Authenticate` header, if present, has a `Bearer` challenge
    /// (any casing). A 401 that challenges only another scheme is not about this token.
    public func didRequest(
        _ urlRequest: URLRequest,
        with response: HTTPURLResponse,
        failDueToAuthenticationError error: any Error
    ) -> Bool {
        guard response.statusCode == 401 else { return false }
        guard let header = response.value(forHTTPHeaderField: "WWW-Authenticate"),
            !header.trimmingCharacters(in: .whitespaces).isEmpty
        else {
            return true
        }
        return AuthenticationChallenge.parse(header).contains { $0.hasScheme("Bearer") }
    }

    /// Whether the request's `Authorization` header carries this token.
    public func isRequest(_ urlRequest: URLRequest, authenticatedWith credential: OAuthToken) -> Bool {
        urlRequest.value(forHTTPHeaderField: "Authorization") == Self.authorization(for: credential)
    }

    /// `true` for `invalid_grant`: the refresh token (or code) is dead and the user must sign in.
    public func isCredentialInvalidated(by error: any Error) -> Bool {
        (error as? OAuthError)?.code == .invalidGrant
    }

    private static func authorization(for token: OAuthToken) -> String {
        let scheme = token.isBearer || token.tokenType.isEmpty ? "Bearer" : token.tokenType
        return "\(scheme) \(token.accessToken)"
    }
}

/// The OAuth 2.0 authenticator: the ``AuthenticationInterceptor`` running bearer tokens from an
/// ``OAuthFlow``.
///
/// ```swift
/// let authenticator = OAuthAuthenticator(store: FileTokenStore(directory: tokensFolder))
/// await authenticator.configure(with: ClientCredentialsFlow(
///     tokenEndpoint: URL(string: "https://auth.example.com/token")!,
///     client: .clientSecretBasic(id: "my-app", secret: secret),
///     scope: "read"))
/// let me = try await Me(authenticator: authenticator).request()
/// ```
public typealias OAuthAuthenticator = AuthenticationInterceptor<BearerTokenAuthenticator>

extension AuthenticationInterceptor where A == BearerTokenAuthenticator {
    /// Creates an OAuth authenticator that uses `flow`, keeping tokens in `store` under the
    /// flow's ``OAuthFlow/storeKey``.
    public init(
        flow: any OAuthFlow,
        token: OAuthToken? = nil,
        store: (any TokenStore)? = nil,
        configuration: Configuration = Configuration()
    ) {
        self.init(
            authenticator: BearerTokenAuthenticator(flow: flow),
            credential: token,
            store: store,
            storeKey: flow.storeKey,
            configuration: configuration
        )
    }

    /// Uses `flow` from now on (the seed package's `configure(with:)`).
    ///
    /// With a `token`, it becomes current and is stored. Without one, the token stored under the
    /// flow's ``OAuthFlow/storeKey`` is used, or the flow obtains one at the first request.
    public func configure(with flow: any OAuthFlow, token: OAuthToken? = nil) async {
        await configure(with: BearerTokenAuthenticator(flow: flow), credential: token, storeKey: flow.storeKey)
    }
}
