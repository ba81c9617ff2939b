#if MCP
import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import MCPAuthentication
import OAuthFlows
import OpenIDConnect
import ResourceDiscovery

/// An agent in a company whose identity provider (`enterprise`) signs its people in. The user
/// signs in there once, with any user agent (the system browser by default); the session is kept
/// in `tokens` and restored at every launch. Their ID token then becomes an ID-JAG for the MCP
/// server's authorization server, and an access token there: no browser at the MCP server.
///
/// `serverIssuer` is that authorization server's issuer identifier, where the agent was
/// registered: the one the MCP server's metadata names (RFC 9728 `authorization_servers`).
func enterpriseAuthorizer(
    server: URL, serverIssuer: String, agent: ClientAuthentication,
    enterprise: URL, enterpriseClient: ClientAuthentication, tokens: URL,
    userAgent: any AuthorizationUserAgent = LoopbackUserAgent()
) async throws -> MCPAuthorizer {
    let store = FileTokenStore(directory: tokens)
    let openID = OpenIDClient(
        provider: try await OpenIDProvider.discover(issuer: enterprise), client: enterpriseClient)
    var session = try await openID.restore(store: store)
    if session == nil {
        let signedIn = OAuthAuthenticator(store: store)
        _ = try await openID.signIn(
            redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "openid profile offline_access",
            request: OpenIDAuthenticationRequest(prompt: "consent"),  // a refresh token for the session
            userAgent: userAgent, configuring: signedIn)
        session = signedIn
    }
    guard let session else { throw CancellationError() }
    let signIn = ResourceSignIn(
        resource: server,
        registration: ClientRegistrationPolicy(preRegistered: [serverIssuer: agent]),
        method: .enterpriseManaged(try IdentityAssertionGrant(openID: openID, session: session)),
        store: store)
    return MCPAuthorizer(signIn: signIn)
}
#endif
