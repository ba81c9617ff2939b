import AuthenticatedRequests
import Foundation

/// The enterprise half of Enterprise-Managed Authorization (MCP's SEP-990, the IETF's Identity
/// Assertion JWT Authorization Grant): the enterprise's identity provider, where the user signed
/// in, exchanges their ID token for an ID-JAG (RFC 8693, `requested_token_type`
/// `urn:ietf:params:oauth:token-type:id-jag`) naming another authorization server as its
/// `audience` and a resource; that server then grants an access token for the ID-JAG with the
/// JWT bearer grant (RFC 7523). No browser opens at that server.
///
/// ```swift
/// let enterprise = IdentityAssertionGrant(
///     tokenEndpoint: URL(string: "https://login.example.com/oauth2/token")!,
///     client: .clientSecretBasic(id: "agent-at-idp", secret: idpSecret),
///     subject: .idToken(of: enterpriseSession))
/// let flow = JWTBearerFlow(
///     tokenEndpoint: URL(string: "https://auth.tools.example.com/token")!,
///     client: .clientSecretBasic(id: "agent", secret: secret),
///     assertion: enterprise.assertion(
///         audience: "https://auth.tools.example.com", resource: URL(string: "https://tools.example.com/mcp")!))
/// ```
///
/// Every grant asks for a new ID-JAG with the subject's current ID token: the session is
/// refreshed at the provider first when its ID token has expired (``SecurityTokenSource/idToken(of:)``),
/// so the chain needs no browser for as long as the provider's refresh token holds.
/// `ResourceSignIn`'s `enterpriseManaged` method finds the audience and resource by discovery.
public struct IdentityAssertionGrant: Sendable, CustomStringConvertible {
    /// The identity provider's token endpoint.
    public let tokenEndpoint: URL
    /// The client at the identity provider and how it authenticates there.
    public let client: ClientAuthentication
    /// Gives the token the ID-JAG is issued for, usually ``SecurityTokenSource/idToken(of:)`` of
    /// the user's session at the provider.
    public let subject: SecurityTokenSource

    /// Creates the grant.
    ///
    /// - Parameters:
    ///   - tokenEndpoint: The identity provider's token endpoint.
    ///   - client: The client at the identity provider.
    ///   - subject: Gives the subject token for every exchange.
    public init(tokenEndpoint: URL, client: ClientAuthentication, subject: SecurityTokenSource) {
        self.tokenEndpoint = tokenEndpoint
        self.client = client
        self.subject = subject
    }

    /// The token exchange that asks the provider for an ID-JAG.
    ///
    /// - Parameters:
    ///   - audience: The issuer of the authorization server that is to accept the ID-JAG.
    ///   - resource: The resource the access token is for (RFC 8707), if any.
    ///   - scope: The scope the ID-JAG is to carry, if any.
    public func exchange(audience: String, resource: URL?, scope: String?) -> TokenExchangeFlow {
        TokenExchangeFlow(
            tokenEndpoint: tokenEndpoint, client: client, subject: subject, requestedTokenType: .idJAG,
            audiences: [audience], resources: resource.map { [$0] } ?? [], scope: scope)
    }

    /// An assertion source for the JWT bearer grant at `audience`: a new ID-JAG from the provider
    /// for every grant (they live minutes and are meant for one use). The provider's reply must
    /// say it issued an ID-JAG (`issued_token_type`), else nothing is sent.
    ///
    /// - Parameters:
    ///   - audience: The issuer of the authorization server that is to accept the ID-JAG.
    ///   - resource: The resource the access token is for (RFC 8707), if any.
    ///   - scope: The scope the ID-JAG is to carry, if any.
    public func assertion(audience: String, resource: URL?, scope: String? = nil) -> AssertionSource {
        let exchange = exchange(audience: audience, resource: resource, scope: scope)
        return AssertionSource(name: "an ID-JAG from \(tokenEndpoint.redactedForDisplay) for \(audience)") { context in
            try await exchange.obtainToken(for: context).accessToken
        }
    }

    /// The provider's token endpoint, the client and the subject's source; no token.
    public var description: String {
        "IdentityAssertionGrant(\(tokenEndpoint.redactedForDisplay), \(client), subject: \(subject))"
    }
}
