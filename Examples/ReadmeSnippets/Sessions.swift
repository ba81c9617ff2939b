// The README's session snippets, compiled by every build so that they stay true.
import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// README: "Restore a session".
func restoreASession(tokensFolder: URL, issuer: URL) async throws -> OAuthAuthenticator {
    let store = FileTokenStore(directory: tokensFolder)
    let metadata = try await AuthorizationServerMetadata.discover(issuer: issuer)
    let client = ClientAuthentication.none(id: "my-cli")

    // A new process: one call brings the session back, or says there is none.
    if let authenticator = try await OAuthAuthenticator.restore(metadata: metadata, client: client, store: store) {
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

/// README: "Restore a session", watching the session's state.
func watchTheSession(_ authenticator: OAuthAuthenticator) async {
    for await state in await authenticator.sessionStates() {
        switch state {
        case .signedIn: break
        case .signedOut, .reauthenticationRequired: break  // show the sign-in screen
        case .refreshOutcomeUnknown: break  // ask the user to sign in again
        }
    }
}

/// README: "Several processes, one store".
func severalProcessesOneStore(tokenEndpoint: URL) async throws {
    // Every process (each `mytool` run, each worker) opens the same folder.
    let store = FileTokenStore(directory: URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".mytool"))
    guard
        let authenticator = try await OAuthAuthenticator.restore(
            tokenEndpoint: tokenEndpoint,
            client: .none(id: "mytool"),
            account: "ada@example.com",  // several accounts of one client: one entry each
            store: store,
            configuration: .init(storeLockTimeout: 30)  // how long to wait for another's refresh
        )
    else { return }
    do {
        _ = try await authenticator.validCredential()
    } catch let error as AuthenticationError where error.code == .refreshOutcomeUnknown {
        // Another process died mid-refresh; its refresh token may be spent. Sign in again, or,
        // for a server without refresh token rotation:
        try await authenticator.resolveUnknownRefreshOutcome()
    }
}
