#if MCP
import AuthenticatedRequests
import Foundation
import MCPAuthentication
import OAuthFlows
import OpenIDConnect
import ResourceDiscovery

/// An agent in a company whose identity provider signed the user in (`session`): the user's ID
/// token becomes an ID-JAG for the MCP server's authorization server, then an access token
/// there; no browser at the MCP server, and none again while the provider's refresh token holds.
func enterpriseAuthorizer(
    server: URL, issuer: String, secret: String, openID: OpenIDClient, session: OAuthAuthenticator
) throws -> MCPAuthorizer {
    let signIn = ResourceSignIn(
        resource: server,
        registration: ClientRegistrationPolicy(preRegistered: [
            issuer: .clientSecretBasic(id: "notes-agent", secret: secret)
        ]),
        method: .enterpriseManaged(try IdentityAssertionGrant(openID: openID, session: session)),
        store: FileTokenStore(directory: URL(fileURLWithPath: "tokens")))
    return MCPAuthorizer(signIn: signIn)
}
#endif
