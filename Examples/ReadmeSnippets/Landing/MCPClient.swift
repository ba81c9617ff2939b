#if MCP
import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import MCP
import MCPAuthentication
import ResourceDiscovery

/// An MCP client signed in from the server's URL alone; the session survives relaunches.
func listTools(at server: URL, tokens: URL) async throws -> [Tool] {
    let signIn = ResourceSignIn(
        resource: server,
        registration: .dynamic(clientName: "My Agent", compatibility: .clientIDInBodyWithBasicAuthentication),
        method: .browser(LoopbackUserAgent()),
        store: FileTokenStore(directory: tokens))
    let authorizer = MCPAuthorizer(signIn: signIn)
    let transport = HTTPClientTransport(
        endpoint: server, authorizer: authorizer, requestModifier: authorizer.modify)  // DPoP proofs
    let client = Client(name: "My Agent", version: "1.0")
    _ = try await client.connect(transport: transport)
    return try await client.listTools().tools
}
#endif
