#if AsyncHTTPClient
import AsyncHTTPClientTransport
import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OpenIDConnect

#if os(macOS) || os(Linux)
/// FAPI 2.0 with mutual TLS: tls_client_auth, certificate-bound tokens and PAR.
func signInWithFAPI2MutualTLS(issuer: URL, identity: ClientIdentity, tokensFolder: URL) async throws
    -> OpenIDSession
{
    let transport = AsyncHTTPClientTransport(clientIdentity: identity)
    let provider = try await OpenIDProvider.discover(
        issuer: issuer, context: AuthenticationContext(transport: transport))
    let oidc = OpenIDClient(provider: provider, client: .tlsClientAuth(id: "my-fapi-client"))
    let authenticator = OAuthAuthenticator(
        store: FileTokenStore(directory: tokensFolder),
        configuration: .init(tokenTransport: transport))  // PAR, token and resources present the certificate
    return try await oidc.signIn(
        redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "openid",
        userAgent: LoopbackUserAgent(), configuring: authenticator,
        pushesAuthorizationRequests: true)
}
#endif
#endif
