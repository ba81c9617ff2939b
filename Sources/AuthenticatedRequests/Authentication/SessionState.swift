/// Where a session stands, for an app to show: signed in, signed out, or in need of the user.
///
/// Observe it with ``AuthenticationInterceptor/sessionStates()`` instead of polling.
public enum SessionState: Sendable, Hashable {
    /// A credential is there (valid, or refreshable when needed).
    case signedIn
    /// No credential: never signed in, or signed out.
    case signedOut
    /// The server rejected the grant (`invalid_grant`); the credential was cleared and the user
    /// must sign in again.
    case reauthenticationRequired
    /// A process died while it refreshed the stored credential; see
    /// ``AuthenticationError/Code/refreshOutcomeUnknown``. When and by whom:
    /// ``AuthenticationInterceptor/unknownRefreshOutcome``; the operator's action:
    /// ``AuthenticationInterceptor/resolveUnknownRefreshOutcome(_:)``.
    case refreshOutcomeUnknown
}
