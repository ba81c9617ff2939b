import AuthenticatedRequests
import Foundation
import OAuthFlows

/// Everything a ``CodeFlowManager`` needs to run the authorization code flow with one server.
public struct AuthenticationConfiguration: Sendable {
    /// The authorization endpoint (RFC 6749 §3.1); its own query items are kept.
    public var authorizationEndpoint: URL
    /// The token endpoint (RFC 6749 §3.2).
    public var tokenEndpoint: URL
    /// The client and how it authenticates at the token endpoint (`.none(id:)` for native apps).
    public var client: ClientAuthentication
    /// `redirect_uri`. A loopback user agent replaces its port with the one it listens on.
    public var redirectURI: URL
    /// `scope`, space-delimited.
    public var scope: String?
    /// Further authorization request parameters (e.g. `prompt`, `login_hint`, `resource`).
    public var additionalParameters: [String: String]
    /// PKCE or not.
    public var codeFlowConfiguration: any CodeFlowConfiguration
    /// The server's issuer identifier, for the RFC 9207 `iss` check.
    public var issuer: String?
    /// Whether the redirect must carry `iss` (the server's metadata says
    /// `authorization_response_iss_parameter_supported`).
    public var requiresIssuerParameter: Bool

    /// Creates a configuration by hand.
    public init(
        authorizationEndpoint: URL,
        tokenEndpoint: URL,
        client: ClientAuthentication,
        redirectURI: URL,
        scope: String? = nil,
        additionalParameters: [String: String] = [:],
        codeFlowConfiguration: any CodeFlowConfiguration = PKCECodeFlowConfiguration(),
        issuer: String? = nil,
        requiresIssuerParameter: Bool = false
    ) {
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.client = client
        self.redirectURI = redirectURI
        self.scope = scope
        self.additionalParameters = additionalParameters
        self.codeFlowConfiguration = codeFlowConfiguration
        self.issuer = issuer
        self.requiresIssuerParameter = requiresIssuerParameter
    }

    /// Creates a configuration from discovered metadata: endpoints, issuer and the `iss` rule.
    /// - Throws: `TokenEndpointError` when an endpoint is missing.
    public init(
        metadata: AuthorizationServerMetadata,
        client: ClientAuthentication,
        redirectURI: URL,
        scope: String? = nil,
        additionalParameters: [String: String] = [:],
        codeFlowConfiguration: any CodeFlowConfiguration = PKCECodeFlowConfiguration()
    ) throws {
        guard let authorizationEndpoint = metadata.authorizationEndpoint else {
            throw CodeFlowError(.invalidConfiguration, "The server metadata has no authorization_endpoint.")
        }
        self.init(
            authorizationEndpoint: authorizationEndpoint,
            tokenEndpoint: try metadata.tokenEndpoint(client: client).url,
            client: client,
            redirectURI: redirectURI,
            scope: scope,
            additionalParameters: additionalParameters,
            codeFlowConfiguration: codeFlowConfiguration,
            issuer: metadata.issuer,
            requiresIssuerParameter: metadata.authorizationResponseIssParameterSupported
        )
    }
}
