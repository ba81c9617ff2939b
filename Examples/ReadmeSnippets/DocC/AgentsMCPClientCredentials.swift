#if MCP
import AuthenticatedRequests
import Foundation
import JWTKit
import MCPAuthentication
import OAuthFlows
import OpenIDConnect
import ResourceDiscovery

/// A service that calls an MCP server as itself (MCP's machine-to-machine extension): the client
/// credentials grant, authenticated with a key (`private_key_jwt`) registered at the server's
/// authorization server; no browser, no registration.
func serviceAuthorizer(server: URL, issuer: String, pem: String) throws -> MCPAuthorizer {
    let client = ClientAuthentication.assertion(
        id: "billing-service", signer: PrivateKeyJWT(key: try ES256PrivateKey(pem: pem)))
    let signIn = ResourceSignIn(
        resource: server,
        registration: ClientRegistrationPolicy(preRegistered: [issuer: client]),
        method: .clientCredentials,
        store: InMemoryTokenStore())
    return MCPAuthorizer(signIn: signIn)
}
#endif
