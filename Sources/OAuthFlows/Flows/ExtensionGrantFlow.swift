import AuthenticatedRequests
import Foundation

/// Any grant by its `grant_type` (RFC 6749 §4.5), with parameters fixed at creation: a SAML
/// bearer grant, a server's own. For token exchange use ``TokenExchangeFlow``, and for the JWT
/// bearer grant ``JWTBearerFlow``: they ask their sources for what to present on every grant.
///
/// Refreshes use the refresh token grant when a refresh token was issued, and run the grant
/// again otherwise.
///
/// ```swift
/// let exchange = ExtensionGrantFlow(
///     tokenEndpoint: tokenURL, client: client, grantType: ExtensionGrantFlow.tokenExchange,
///     parameters: ["subject_token": upstream, "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"])
/// ```
public struct ExtensionGrantFlow: OAuthFlow, CustomStringConvertible {
    /// `urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693).
    public static let tokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
    /// `urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523).
    public static let jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// `grant_type`.
    public let grantType: String
    /// The grant's parameters, sent sorted by name. Values are never shown in descriptions.
    public let parameters: [String: String]
    /// `scope`, if any.
    public let scope: String?

    /// Creates the flow; `resources` are RFC 8707 resource indicators, sent with every token
    /// request.
    public init(
        tokenEndpoint: URL,
        client: ClientAuthentication,
        grantType: String,
        parameters: [String: String],
        scope: String? = nil,
        resources: [URL] = []
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client, resources: resources)
        self.grantType = grantType
        self.parameters = parameters
        self.scope = scope
    }

    /// Client, endpoint and grant type.
    public var storeKey: String { endpoint.storeKey + "#grant=\(grantType)" }

    /// Runs the grant.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        try await requestToken(replacing: nil, context: context)
    }

    private func requestToken(replacing previous: OAuthToken?, context: AuthenticationContext) async throws
        -> OAuthToken
    {
        var pairs = parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        if let scope { pairs.append(("scope", scope)) }
        return try await endpoint.requestToken(
            grantType: grantType,
            parameters: pairs,
            requestedScope: scope,
            replacing: previous,
            context: context
        )
    }

    /// Refreshes with the refresh token, or runs the grant again without one; a DPoP-bound
    /// token's key is kept either way.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        if token.refreshToken != nil {
            return try await endpoint.refresh(token, context: context)
        }
        return try await requestToken(replacing: token, context: context)
    }

    /// The grant type and parameter names, without values.
    public var description: String {
        "ExtensionGrantFlow(\(grantType), parameters: \(parameters.keys.sorted()), \(endpoint.client))"
    }
}
