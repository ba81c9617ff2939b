// The README's "Sign in with OpenID Connect" snippet, compiled by every build so that it stays true.
import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import OpenIDConnect

#if os(macOS) || os(Linux)
    /// README: "Sign in with OpenID Connect".
    func signInWithOpenIDConnect(issuer: URL, tokensFolder: URL) async throws -> IDTokenClaims {
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
        _ = profile["email"]

        try await oidc.signOut(  // revoke, delete, and end the session at the provider
            authenticator, postLogoutRedirectURI: URL(string: "http://127.0.0.1/signed-out")!,
            userAgent: LoopbackUserAgent())
        return session.claims  // subject, name, email, and every claim in `raw`
    }
#endif
