import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OpenIDConnect

#if os(macOS) || os(Linux)
/// Signs the user in with OpenID Connect; the validated ID token's claims come back.
func signInWithOpenID(configuring authenticator: OAuthAuthenticator) async throws -> IDTokenClaims {
    let provider = try await OpenIDProvider.discover(issuer: URL(string: "https://accounts.example.com")!)
    let oidc = OpenIDClient(provider: provider, client: .none(id: "my-app"))
    let session = try await oidc.signIn(
        redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "openid profile email",
        userAgent: LoopbackUserAgent(), configuring: authenticator)
    return session.claims  // session.claims.subject, session.claims.email
}
#endif
