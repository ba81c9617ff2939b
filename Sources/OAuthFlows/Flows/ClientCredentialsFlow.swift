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
///     resources: [URL(string: "https://api.example.com")!]))
/// ```
public struct ClientCredentialsFlow: OAuthFlow {
    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// `scope`: the space-delimited scope requested, if any.
    public var scope: String?
    /// Further parameters, e.g. `audience`; sent sorted by name. Resource indicators go in
    /// ``TokenEndpoint/resources``, which can name several.
    public var additionalParameters: [String: String]

    /// Creates the flow.
    /// - Parameters:
    ///   - tokenEndpoint: The token endpoint's URL.
    ///   - client: How the client authenticates.
    ///   - scope: `scope`: space-delimited (`"reports:read reports:write"`), or `nil` for the
    ///     server's default.
    ///   - additionalParameters: Further parameters, e.g. `audience`.
    ///   - resources: RFC 8707 resource indicators, each sent as a `resource` parameter.
    public init(
        tokenEndpoint: URL,
        client: ClientAuthentication,
        scope: String? = nil,
        additionalParameters: [String: String] = [:],
        resources: [URL] = []
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client, resources: resources)
        self.scope = scope
        self.additionalParameters = additionalParameters
    }

    /// The seed package's `ARClientCredentials(clientID:clientSecret:scope:)`, with
    /// `client_secret_basic`.
    /// - Parameters:
    ///   - tokenEndpoint: The token endpoint's URL.
    ///   - clientID: `client_id`.
    ///   - clientSecret: The client secret, sent with HTTP Basic authentication.
    ///   - scope: `scope`: space-delimited, as in the other initializer and every other flow.
    public init(tokenEndpoint: URL, clientID: String, clientSecret: String, scope: String? = nil) {
        self.init(
            tokenEndpoint: tokenEndpoint,
            client: .clientSecretBasic(id: clientID, secret: clientSecret),
            scope: scope
        )
    }

    /// The seed package's initializer, which took the scope as a set.
    @available(*, deprecated, message: "Pass the scope as one space-delimited String, as every other flow takes it.")
    public init(tokenEndpoint: URL, clientID: String, clientSecret: String, scope: Set<String>) {
        self.init(
            tokenEndpoint: tokenEndpoint,
            clientID: clientID,
            clientSecret: clientSecret,
            scope: scope.isEmpty ? nil : scope.sorted().joined(separator: " ")
        )
    }

    /// Client, endpoint and scope: a different scope is a different token.
    public var storeKey: String {
        endpoint.storeKey + (scope.map { "#scope=\($0)" } ?? "")
    }

    /// Runs the grant.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        try await requestToken(replacing: nil, context: context)
    }

    /// Runs the grant again; a DPoP-bound token's key is kept.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        try await requestToken(replacing: token, context: context)
    }

    private func requestToken(replacing previous: OAuthToken?, context: AuthenticationContext) async throws
        -> OAuthToken
    {
        var parameters: [(String, String)] = []
        if let scope { parameters.append(("scope", scope)) }
        parameters += additionalParameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return try await endpoint.requestToken(
            grantType: "client_credentials",
            parameters: parameters,
            requestedScope: scope,
            replacing: previous,
            context: context
        )
    }
}
