import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

/// The flow of a session with one protected resource, made by ``ResourceSignIn``: it obtains
/// the first token as the sign-in's method says (the browser with PKCE S256, the client
/// credentials grant, or not at all), and names the resource (RFC 8707 `resource`) on the
/// authorization request, the code exchange and every refresh.
///
/// Its store key is the client's at the token endpoint, with the account and the resource:
/// `<client id>@<token endpoint>[#account=<account>]#resource=<resource>`, so a session never
/// follows a resource to another authorization server or client.
public struct ResourceSignInFlow: OAuthFlow, CustomStringConvertible {
    /// The resource the tokens are for.
    public let resource: URL
    /// The authorization server's issuer.
    public let issuer: String
    /// The token endpoint, with the client and the resource.
    public let endpoint: TokenEndpoint
    /// The scope asked for.
    public let scope: String?
    /// The account named by the app, if any.
    public let account: String?
    private let server: AuthorizationServerMetadata
    private let method: ResourceSignIn.Method
    private let redirectURI: URL

    init(
        resource: URL,
        server: AuthorizationServerMetadata,
        client: ClientAuthentication,
        scope: String?,
        method: ResourceSignIn.Method,
        redirectURI: URL,
        account: String?
    ) throws {
        self.resource = resource
        self.issuer = server.issuer
        self.endpoint = TokenEndpoint(
            url: try server.tokenEndpoint(client: client).url, client: client, resources: [resource])
        self.scope = scope
        self.account = account
        self.server = server
        self.method = method
        self.redirectURI = redirectURI
    }

    /// `<client id>@<token endpoint>[#account=<account>]#resource=<resource>`.
    public var storeKey: String { endpoint.storeKey(account: account) + "#resource=\(resource.absoluteString)" }

    /// Signs in: in the browser, with the client credentials grant, or not at all
    /// (``ResourceDiscoveryError/Code/interactionRequired``).
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        switch method.kind {
        case .browser(let userAgent):
            let configuration = try AuthenticationConfiguration(
                metadata: server, client: endpoint.client, redirectURI: redirectURI, scope: scope,
                resources: [resource])
            let manager = CodeFlowManager(configuration: configuration, userAgent: userAgent, context: context)
            return try await manager.authorize(account: account).token
        case .clientCredentials:
            return try await ClientCredentialsFlow(
                tokenEndpoint: endpoint.url, client: endpoint.client, scope: scope, resources: [resource]
            ).obtainToken(for: context)
        case .nonInteractive:
            throw ResourceDiscoveryError(
                .interactionRequired,
                "\(resource.redactedForDisplay) needs a sign-in at \(issuer)"
                    + (scope.map { " with the scope '\($0)'" } ?? "") + ", and this context cannot ask the user.")
        }
    }

    /// Refreshes `token` at the token endpoint, naming the resource.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        try await endpoint.refresh(token, context: context)
    }

    /// The resource, the issuer and the client; no secret.
    public var description: String {
        "ResourceSignInFlow(\(resource.redactedForDisplay) at \(issuer), \(endpoint.client)"
            + (account.map { ", account: \($0)" } ?? "") + ")"
    }
}
