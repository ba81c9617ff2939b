import AuthenticatedRequests
import Foundation

/// The refresh token grant (RFC 6749 §6), starting from a refresh token you already hold (e.g.
/// from a previous session).
///
/// Rotation is handled: when the server returns a new refresh token, it replaces the old one (and
/// the authenticator stores it at once); when it returns none, the old one is kept.
/// `invalid_grant` means the refresh token is dead: the authenticator clears the stored token and
/// throws `AuthenticationError` with code `AuthenticationError.Code.reauthenticationRequired`.
public struct RefreshTokenFlow: OAuthFlow {
    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// The refresh token to start from.
    public let refreshToken: String
    /// `scope`: a narrower scope to ask for, if any (RFC 6749 §6).
    public var scope: String?
    /// The account the session belongs to, for apps with several; part of ``storeKey``.
    public var account: String?

    /// Creates the flow; `resources` are RFC 8707 resource indicators, sent with every token
    /// request.
    public init(
        tokenEndpoint: URL,
        client: ClientAuthentication,
        refreshToken: String,
        scope: String? = nil,
        account: String? = nil,
        resources: [URL] = []
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client, resources: resources)
        self.refreshToken = refreshToken
        self.scope = scope
        self.account = account
    }

    /// The seed package's `ARRefreshToken(clientID:clientSecret:refreshToken:)`: a confidential
    /// client with `client_secret_basic`, or a public client when `clientSecret` is `nil`.
    public init(tokenEndpoint: URL, clientID: String, clientSecret: String?, refreshToken: String) {
        self.init(
            tokenEndpoint: tokenEndpoint,
            client: clientSecret.map { .clientSecretBasic(id: clientID, secret: $0) } ?? .none(id: clientID),
            refreshToken: refreshToken
        )
    }

    /// Client, endpoint and account: see ``TokenEndpoint/storeKey(account:)``.
    public var storeKey: String { endpoint.storeKey(account: account) }

    /// Exchanges the starting refresh token.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        try await endpoint.refresh(
            OAuthToken(accessToken: "", refreshToken: refreshToken),
            scope: scope,
            context: context
        )
    }

    /// Exchanges the token's refresh token (the latest, after rotation).
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        try await endpoint.refresh(token, scope: scope, context: context)
    }
}
