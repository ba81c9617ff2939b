#if MCP
import AuthenticatedRequests
import Foundation
import MCPAuthentication
import OAuthFlows
import ResourceDiscovery

/// An MCP client in CI: GitHub Actions' token for the job is the grant at the MCP server's
/// authorization server (`issuer`, found from the server's first 401 and its metadata), with no
/// browser, no registration and no client authentication. `environment` is the job's (the
/// runner's `ACTIONS_ID_TOKEN_REQUEST_URL` and `ACTIONS_ID_TOKEN_REQUEST_TOKEN`).
func ciAuthorizer(
    server: URL, issuer: String,
    environment: @escaping @Sendable () -> [String: String] = { ProcessInfo.processInfo.environment }
) -> MCPAuthorizer {
    let signIn = ResourceSignIn(
        resource: server,
        registration: ClientRegistrationPolicy(preRegistered: [issuer: .unidentified]),
        method: .jwtBearer(.gitHubActions(audience: issuer, environment: environment)),
        store: InMemoryTokenStore())
    return MCPAuthorizer(signIn: signIn)
}
#endif
