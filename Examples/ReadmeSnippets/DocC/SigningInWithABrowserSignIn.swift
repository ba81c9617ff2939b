import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

/// Signs a CLI's user in through the system browser and keeps the session in `authenticator`.
func signInWithTheBrowser(issuer: URL, into authenticator: OAuthAuthenticator) async throws {
    let manager = CodeFlowManager(
        configuration: try AuthenticationConfiguration(
            metadata: try await AuthorizationServerMetadata.discover(issuer: issuer),
            client: .none(id: "my-cli"),
            redirectURI: URL(string: "http://127.0.0.1/callback")!,  // any port: the receiver picks one
            scope: "profile"),
        userAgent: LoopbackUserAgent())  // system browser + loopback redirect receiver
    try await manager.signIn(configuring: authenticator)
}
