import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

/// A session for a CLI: restored from its folder in a new process, or signed in once.
func cliSession(issuer: URL, tokensFolder: URL) async throws -> OAuthAuthenticator {
    let store = FileTokenStore(directory: tokensFolder)
    let metadata = try await AuthorizationServerMetadata.discover(issuer: issuer)
    let client = ClientAuthentication.none(id: "my-cli")

    // A new process: one call brings the session back, or says there is none.
    if let authenticator = try await OAuthAuthenticator.restore(
        metadata: metadata, client: client, store: store)
    {
        return authenticator  // valid token: no token request; expired: one refresh
    }

    // No session yet: sign in once; the session is stored under the same key.
    let authenticator = OAuthAuthenticator(store: store)
    let manager = CodeFlowManager(
        configuration: try AuthenticationConfiguration(
            metadata: metadata,
            client: client,
            redirectURI: URL(string: "http://127.0.0.1/callback")!,
            scope: "profile"
        ),
        userAgent: LoopbackUserAgent()
    )
    try await manager.signIn(configuring: authenticator)
    return authenticator
}
