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
    let client = Client(name: "My Agent", version: "1.0")
    // One call wires it all: the authorizer, DPoP proofs when configured, no token sent elsewhere.
    _ = try await client.connect(transport: authorizer.makeTransport())
    return try await client.listTools().tools
}
#endif
