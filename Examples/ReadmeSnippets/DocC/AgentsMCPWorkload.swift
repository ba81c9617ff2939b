#if MCP
import AuthenticatedRequests
import Foundation
import MCPAuthentication
import OAuthFlows
import ResourceDiscovery

/// An MCP client in CI: GitHub Actions' token for the job is the grant at the MCP server's
/// authorization server, found from the server's first 401; no browser, no registration.
func ciAuthorizer(server: URL, issuer: String) -> MCPAuthorizer {
    let signIn = ResourceSignIn(
        resource: server,
        registration: ClientRegistrationPolicy(preRegistered: [issuer: .none(id: "ci-deployer")]),
        method: .jwtBearer(.gitHubActions(audience: issuer)),
        store: InMemoryTokenStore())
    return MCPAuthorizer(signIn: signIn)
}
#endif
