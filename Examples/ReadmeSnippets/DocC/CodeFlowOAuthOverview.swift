import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

#if os(macOS) || os(Linux)
/// Signs the user in in the system browser and gives `authenticator` the session.
func signInInTheBrowser(issuer: URL, configuring authenticator: OAuthAuthenticator) async throws {
    let manager = CodeFlowManager(
        configuration: try AuthenticationConfiguration(
            metadata: try await AuthorizationServerMetadata.discover(issuer: issuer),
            client: .none(id: "my-cli"),
            redirectURI: URL(string: "http://127.0.0.1/callback")!,  // any port: the receiver picks one
            scope: "profile"),
        userAgent: LoopbackUserAgent())  // the system browser and a loopback redirect receiver
    try await manager.signIn(configuring: authenticator)
}
#endif
