// The README's session snippets, compiled by every build so that they stay true.
import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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
