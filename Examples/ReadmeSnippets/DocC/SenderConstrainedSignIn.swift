import AuthenticatedRequests
import CodeFlowOAuth
import DPoP
import Foundation
import OAuthFlows

/// Signs in with DPoP-bound tokens and a pushed authorization request.
func signInWithDPoP(issuer: URL, tokensFolder: URL) async throws -> OAuthToken {
    let metadata = try await AuthorizationServerMetadata.discover(issuer: issuer)
    let authenticator = OAuthAuthenticator(
        store: FileTokenStore(directory: tokensFolder),
        configuration: .init(proofOfPossession: DPoPProver())  // a new P-256 key per session
    )
    let configuration = try AuthenticationConfiguration(
        metadata: metadata, client: .none(id: "my-app"),
        redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "profile",
        resources: [URL(string: "https://api.example.com/")!],  // RFC 8707
        pushesAuthorizationRequests: true  // also when the server does not require it
    )
    let manager = CodeFlowManager(configuration: configuration, userAgent: LoopbackUserAgent())
    return try await manager.signIn(configuring: authenticator)  // token_type DPoP: bound to the key
}
