import AuthenticatedRequests
import Foundation

/// The client credentials grant (RFC 6749 §4.4): the client acts on its own behalf.
///
/// No refresh token is issued, so a "refresh" runs the grant again.
///
/// ```swift
/// await authenticator.configure(with: ClientCredentialsFlow(
///     tokenEndpoint: URL(string: "https://auth.example.com/token")!,
///     client: .clientSecretBasic(id: "reporting", secret: secret),
///     scope: "reports:read",
///     additionalParameters: ["resource": "https://api.example.com"]))
/// ```
public struct ClientCredentialsFlow: OAuthFlow {
    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// `scope`: the space-delimited scope requested, if any.
    public var scope: String?
    /// Further parameters, e.g. RFC 8707 `resource` or `audience`; sent sorted by name.
    public var additionalParameters: [String: String]

    /// Creates the flow.
    public init(
        tokenEndpoint: URL,
        client: ClientAuthentication,
        scope: String? = nil,
        additionalParameters: [String: String] = [:]
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client)
        self.scope = scope
        self.additionalParameters = additionalParameters
    }

    /// The seed package's `ARClientCredentials(clientID:clientSecret:scope:)`, with
    /// `client_secret_basic`.
    public init(tokenEndpoint: URL, clientID: String, clientSecret: String, scope: Set<String> = []) {
        self.init(
            tokenEndpoint: tokenEndpoint,
            client: .clientSecretBasic(id: clientID, secret: clientSecret),
            scope: scope.isEmpty ? nil : scope.sorted().joined(separator: " ")
        )
    }

    /// Client, endpoint and scope: a different scope is a different token.
    public var storeKey: String {
        endpoint.storeKey + (scope.map { "#scope=\($0)" } ?? "")
    }

    /// Runs the grant.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        var parameters: [(String, String)] = []
        if let scope { parameters.append(("scope", scope)) }
        parameters += additionalParameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return try await endpoint.requestToken(
            grantType: "client_credentials",
            parameters: parameters,
            requestedScope: scope,
            context: context
        )
    }

    /// Runs the grant again.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        try await obtainToken(for: context)
    }
}
