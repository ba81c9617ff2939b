#if MCP
import AuthenticatedRequests
import Foundation
import JWTKit
import MCP
import MCPAuthentication
import OAuthFlows
import OpenIDConnect
import ResourceDiscovery

/// A service that calls an MCP server's tool as itself (MCP's machine-to-machine extension): the
/// client credentials grant, authenticated with a key (`private_key_jwt`, its assertion's
/// audience the issuer, RFC 10070) registered at the server's authorization server; no browser,
/// no registration. On Linux, `URLSession` does not stream, so the transport opens no event
/// stream (`streaming: false`).
func callAsService(
    server: URL, issuer: String, clientID: String, pem: String, tool: String, arguments: [String: Value]
) async throws -> [Tool.Content] {
    let client = ClientAuthentication.assertion(
        id: clientID, signer: PrivateKeyJWT(key: try ES256PrivateKey(pem: pem)))
    let signIn = ResourceSignIn(
        resource: server,
        registration: ClientRegistrationPolicy(preRegistered: [issuer: client]),
        method: .clientCredentials,
        store: InMemoryTokenStore())
    let authorizer = MCPAuthorizer(signIn: signIn)
    let mcp = Client(name: "billing-service", version: "1.0")
    #if canImport(FoundationNetworking)
    _ = try await mcp.connect(transport: authorizer.makeTransport(streaming: false))
    #else
    _ = try await mcp.connect(transport: authorizer.makeTransport())
    #endif
    do {
        let (content, _) = try await mcp.callTool(name: tool, arguments: arguments)
        await mcp.disconnect()
        return content
    } catch {
        await mcp.disconnect()
        throw error
    }
}
#endif
