// The "Conformance" article's FAPI 2.0 snippet, compiled by every build so that it stays true.
import AuthenticatedRequests
import CodeFlowOAuth
import DPoP
import Foundation
import JWTKit
import OpenIDConnect

#if os(macOS) || os(Linux)
    /// The Conformance article: a FAPI 2.0 Security Profile client (private_key_jwt, DPoP, PAR).
    func signInWithFAPI2(issuer: URL, key: ES256PrivateKey, tokensFolder: URL) async throws -> OpenIDSession {
        let provider = try await OpenIDProvider.discover(issuer: issuer)
        let oidc = OpenIDClient(
            provider: provider,
            client: .assertion(  // private_key_jwt; FAPI 2.0 wants the issuer as audience
                id: "my-fapi-client", signer: PrivateKeyJWT(key: key, audience: .issuer(issuer.absoluteString))))
        let authenticator = OAuthAuthenticator(
            store: FileTokenStore(directory: tokensFolder),
            configuration: .init(proofOfPossession: DPoPProver()))  // sender-constrained tokens
        // PKCE S256, a nonce, RFC 9207's iss and the ID token's rules are always on.
        return try await oidc.signIn(
            redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "openid",
            userAgent: LoopbackUserAgent(), configuring: authenticator,
            pushesAuthorizationRequests: true)
    }
#endif
