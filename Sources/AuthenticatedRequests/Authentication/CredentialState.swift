import Foundation

/// The engine's credential state, behind one lock, shared by the actor and the request path.
///
/// The actor is the only place that commits a credential (configured, loaded, refreshed,
/// cleared) and does the store and event work. The request path reads this state without
/// hopping to the actor, and when the credential needs a refresh it elects the one refresh here,
/// under the lock: the first caller starts it and publishes its ``SharedRefresh``, every later
/// caller awaits that same one. Nobody queues on the actor just to learn that a refresh is under way.
struct CredentialState<A: Authenticator>: Sendable {
    var authenticator: A?
    var credential: A.Credential?
    /// The one refresh (or first obtain) under way.
    var refresh: SharedRefresh<A.Credential>?
    var refreshHistory = RefreshHistory()
    /// Bumped on every change of credential or authenticator; a refresh that started under an
    /// older generation does not overwrite newer state.
    var generation: UInt64 = 0
    /// `false` while the actor still has to read the store or save the initial credential.
    var isSettled: Bool
}

/// What a request does next.
enum CredentialDecision<A: Authenticator>: Sendable {
    /// Use this credential now.
    case ready(A, A.Credential)
    /// Wait for the shared refresh.
    case wait(A, SharedRefresh<A.Credential>)
    /// Let the actor read the store (or save the initial credential) first.
    case settle
    /// Fail with this error (no authenticator, or too many refreshes).
    case fail(any Error)
}

/// The refreshes seen within the window of a ``RefreshLimit``.
struct RefreshHistory: Sendable {
    private var dates: [Date] = []

    /// Records a refresh at `now`, or returns `false` when `limit` would be exceeded.
    mutating func record(at now: Date, within limit: RefreshLimit) -> Bool {
        dates.removeAll { now.timeIntervalSince($0) >= limit.window }
        guard dates.count < limit.maximumCount else { return false }
        dates.append(now)
        return true
    }
}
