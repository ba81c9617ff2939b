#if AsyncHTTPClient
import AsyncHTTPClientTransport
import AuthenticatedRequests
import Foundation
import OAuthFlows

/// A service that authenticates with its workload certificate (`tls_client_auth`) and whose
/// tokens are bound to it: the files are read again whenever the certificate rotates.
func paymentsAuthenticator(issuer: URL) async throws -> OAuthAuthenticator {
    let transport = AsyncHTTPClientTransport(
        clientIdentity: .pemFiles(
            certificateChain: URL(fileURLWithPath: "/run/secrets/tls/tls.crt"),
            privateKey: URL(fileURLWithPath: "/run/secrets/tls/tls.key")))
    let context = AuthenticationContext(transport: transport)
    let metadata = try await AuthorizationServerMetadata.discover(issuer: issuer, context: context)
    // Token, revocation and introspection requests go to the server's mtls_endpoint_aliases.
    let flow = try metadata.clientCredentialsFlow(client: .tlsClientAuth(id: "payments"), scope: "payments")
    return OAuthAuthenticator(flow: flow, configuration: .init(tokenTransport: transport))
}
#endif
