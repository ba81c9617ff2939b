import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OpenIDConnect

/// Signs the user in with OpenID Connect, reads their profile, and signs them out.
func openIDSignInAndOut(issuer: URL, tokensFolder: URL) async throws -> (OpenIDSession, UserInfo) {
    let provider = try await OpenIDProvider.discover(issuer: issuer)  // openid-configuration + JWKS
    let oidc = OpenIDClient(provider: provider, client: .none(id: "my-app"))
    let authenticator = OAuthAuthenticator(store: FileTokenStore(directory: tokensFolder))

    let session = try await oidc.signIn(
        redirectURI: URL(string: "http://127.0.0.1/callback")!,
        scope: "openid profile email",
        request: OpenIDAuthenticationRequest(maxAge: 3600, loginHint: "ada@example.com"),
        userAgent: LoopbackUserAgent(),
        configuring: authenticator
    )
    let profile = try await oidc.userInfo(using: authenticator)  // its sub must be the ID token's

    try await oidc.signOut(  // revoke, delete, and end the session at the provider
        authenticator, postLogoutRedirectURI: URL(string: "http://127.0.0.1/signed-out")!,
        userAgent: LoopbackUserAgent())
    return (session, profile)
}
