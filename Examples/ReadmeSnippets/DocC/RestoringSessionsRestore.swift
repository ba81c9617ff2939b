import AuthenticatedRequests
import Foundation
import OAuthFlows

/// The session a CLI stored at its last run, or `nil` when there is none yet: then sign in once
/// (CodeFlowOAuth), which stores the session under the same key.
func restoredCLISession(issuer: URL, tokensFolder: URL) async throws -> OAuthAuthenticator? {
    let store = FileTokenStore(directory: tokensFolder)
    let metadata = try await AuthorizationServerMetadata.discover(issuer: issuer)
    let client = ClientAuthentication.none(id: "my-cli")
    // A valid token: no token request; an expired one: one refresh.
    return try await OAuthAuthenticator.restore(metadata: metadata, client: client, store: store)
}
