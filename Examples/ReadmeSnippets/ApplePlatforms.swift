// The README's "Sign in on iOS" and "Keychain" snippets. They use Apple's frameworks, so they are
// compiled where those exist (an iOS or visionOS build of this package), not on Linux.
#if canImport(AuthenticationServices) && canImport(UIKit) && (os(iOS) || os(visionOS))
    import AuthenticatedRequests
    import AuthenticationServices
    import CodeFlowOAuth
    import Foundation
    import OAuthFlows
    import UIKit

    /// README: "Sign in on iOS" and "Keychain".
    @MainActor
    func signInOnIOS(window: UIWindow, issuer: URL) async throws -> OAuthAuthenticator? {
        // Keychain: one item per session, readable after the first unlock, never synced or restored
        // to another device.
        let store = try KeychainTokenStore(service: "com.example.app.tokens")
        let metadata = try await AuthorizationServerMetadata.discover(issuer: issuer)
        let client = ClientAuthentication.none(id: "ios-app")

        if let authenticator = try await OAuthAuthenticator.restore(metadata: metadata, client: client, store: store) {
            return authenticator  // signed in before: no sheet
        }

        let authenticator = OAuthAuthenticator(store: store)
        let manager = CodeFlowManager(
            configuration: try AuthenticationConfiguration(
                metadata: metadata,
                client: client,
                redirectURI: URL(string: "com.example.app:/oauth")!,  // a reverse-domain scheme
                scope: "openid profile"
            ),
            userAgent: WebAuthenticationSessionUserAgent(prefersEphemeralWebBrowserSession: true) { window }
        )
        do {
            try await manager.signIn(configuring: authenticator)
        } catch is CancellationError {
            return nil  // the user closed the sheet
        }
        return authenticator
    }
#endif
