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
    /// The authorization server's metadata, as discovery found it.
    public var serverMetadata: AuthorizationServerMetadata { server }
    private let server: AuthorizationServerMetadata
    private let method: ResourceSignIn.Method
    private let redirectURI: URL
    /// The registrar of a dynamically registered client, which forgets the registration when the
    /// server no longer knows the client.
    var registrar: ClientRegistrar?

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
            url: try server.tokenEndpoint(client: client).url, client: client.at(issuer: server.issuer),
            resources: [resource])
        self.scope = scope
        self.account = account
        self.server = server
        self.method = method
        self.redirectURI = redirectURI
    }

    /// `<client id>@<token endpoint>[#account=<account>]#resource=<resource>`.
    public var storeKey: String { endpoint.storeKey(account: account) + "#resource=\(resource.absoluteString)" }

    /// Signs in: in the browser, with the client credentials or JWT bearer grant, or not at all
    /// (``ResourceDiscoveryError/Code/interactionRequired``).
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        try await forgettingAnUnknownClient { try await obtainTokenOnce(for: context) }
    }

    /// Runs `body`; when the server answers `invalid_client` for a client registered dynamically,
    /// the stored registration is forgotten (the next ``ResourceSignIn`` registers again) and the
    /// error is thrown on.
    private func forgettingAnUnknownClient(_ body: () async throws -> OAuthToken) async throws -> OAuthToken {
        do {
            return try await body()
        } catch let error as OAuthError where error.code == .invalidClient {
            if let registrar { try? await registrar.forgetRegistration(at: issuer) }
            throw error
        }
    }

    private func obtainTokenOnce(for context: AuthenticationContext) async throws -> OAuthToken {
        try await method.obtainToken(
            at: server, endpoint: endpoint, scope: scope, resources: [resource], redirectURI: redirectURI,
            account: account, context: context
        ) {
            ResourceDiscoveryError(
                .interactionRequired,
                "\(resource.redactedForDisplay) needs a sign-in at \(issuer)"
                    + (scope.map { " with the scope '\($0)'" } ?? "") + ", and this context cannot ask the user.")
        }
    }

    /// The resource: its tokens go to its URLs only (its origin, its path and below), and any
    /// other URL is refused before anything is sent.
    public var resourceBoundary: ResourceBoundary? { ResourceBoundary(resource) }

    /// `true`: a resource's step-up challenge is answered by ``stepUp(_:to:for:)``.
    public var canStepUp: Bool { true }

    /// Obtains a token that meets `requirement`, as the sign-in's method allows: in the browser
    /// with the union of the granted and required scopes and the `acr_values` and `max_age` asked
    /// for (RFC 9470), or with the client credentials or JWT bearer grant and that scope. A
    /// non-interactive sign-in, and a machine grant asked for an authentication level or age
    /// (which only a person signing in can give), throw `StepUpError`
    /// (`StepUpError.Code.interactionRequired`) at once, carrying what is required; neither
    /// opens a browser nor sends a request.
    public func stepUp(_ token: OAuthToken, to requirement: StepUpRequirement, for context: AuthenticationContext)
        async throws -> OAuthToken
    {
        if method.isMachine, !requirement.acrValues.isEmpty || requirement.maxAge != nil {
            throw StepUpError(.interactionRequired, requirement: requirement, url: resource)
        }
        var parameters: [String: String] = [:]
        if !requirement.acrValues.isEmpty { parameters["acr_values"] = requirement.acrValues.joined(separator: " ") }
        if let maxAge = requirement.maxAge { parameters["max_age"] = String(maxAge) }
        return try await method.obtainToken(
            at: server, endpoint: endpoint, scope: requirement.scope(addedTo: token.scope ?? self.scope),
            parameters: parameters, resources: [resource], redirectURI: redirectURI, account: account,
            context: context
        ) { StepUpError(.interactionRequired, requirement: requirement, url: resource) }
    }

    /// Refreshes `token` at the token endpoint, naming the resource; a machine grant without a
    /// refresh token runs the grant again (with the source's current assertion).
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        if method.isMachine, token.refreshToken == nil {
            return try await obtainToken(for: context)
        }
        return try await forgettingAnUnknownClient { try await endpoint.refresh(token, context: context) }
    }

    /// The resource, the issuer and the client; no secret.
    public var description: String {
        "ResourceSignInFlow(\(resource.redactedForDisplay) at \(issuer), \(endpoint.client)"
            + (account.map { ", account: \($0)" } ?? "") + ")"
    }
}
