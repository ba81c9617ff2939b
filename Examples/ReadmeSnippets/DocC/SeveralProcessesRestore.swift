import AuthenticatedRequests
import Foundation
import OAuthFlows

/// One account's session of `mytool`, shared by every process that opens the same folder (each
/// run, each worker): one refresh among them at expiry. `nil` when that account never signed in.
func sharedSession(tokenEndpoint: URL, account: String) async throws -> OAuthAuthenticator? {
    let store = FileTokenStore(
        directory: URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".mytool"))
    guard
        let authenticator = try await OAuthAuthenticator.restore(
            tokenEndpoint: tokenEndpoint,
            client: .none(id: "mytool"),
            account: account,  // several accounts of one client: one entry each
            store: store,
            configuration: .init(storeLockTimeout: 30)  // how long to wait for another's refresh
        )
    else { return nil }
    do {
        _ = try await authenticator.validCredential()
    } catch let error as AuthenticationError where error.code == .refreshOutcomeUnknown {
        // Another process died mid-refresh; its refresh token may be spent. Sign in again, or,
        // for a server without refresh token rotation:
        try await authenticator.resolveUnknownRefreshOutcome()
    }
    return authenticator
}
