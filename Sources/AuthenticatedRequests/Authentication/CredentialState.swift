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
    var credential: A.Credential? {
        didSet {
            guard let oldValue else { return }
            supersededSecrets.append(oldValue.secretValues)
        }
    }
    /// The secrets of the credentials the current one replaced: a late response may still echo
    /// any credential sent before the last refreshes (a request sent with one, answered after two
    /// refreshes), so their secrets are removed from error text too.
    var supersededSecrets = SupersededSecrets()
    /// The token store entry of this credential.
    var storeKey: String?
    /// The one refresh (or first obtain) under way.
    var refresh: SharedRefresh<A.Credential>?
    /// The refreshes the authorization server answered, for the ``RefreshLimit``.
    var refreshHistory = RefreshHistory()
    /// Bumped on every change of credential or authenticator; a refresh that started under an
    /// older generation does not overwrite newer state.
    var generation: UInt64 = 0
    /// Bumped whenever a refresh finishes, so a request can tell whether a refresh ended after
    /// it was sent.
    var refreshEpoch: UInt64 = 0
    /// The last refresh's failure while its credential is still current: a rejection that
    /// arrives late for a request sent before it gets this error instead of a second refresh
    /// from the same credential.
    var lastFailure: RefreshFailure?
    /// The server asked not to be called before this date (`Retry-After`); refreshes needed
    /// before then fail at once with its error.
    var backoff: Backoff?
    /// `false` while the actor still has to read the store or save the initial credential.
    var isSettled: Bool

    /// Forgets everything the previous credential's refreshes left: a new credential starts with
    /// a fresh refresh budget.
    mutating func resetRefreshState() {
        refresh = nil
        refreshHistory = RefreshHistory()
        lastFailure = nil
        backoff = nil
    }
}

/// A refresh that failed, and when.
struct RefreshFailure: Sendable {
    /// The ``CredentialState/refreshEpoch`` the failed refresh ended.
    var epoch: UInt64
    /// The error its waiters got.
    var error: any Error
}

/// The server's `Retry-After`: no refresh before ``until``; requests that need one get ``error``.
struct Backoff: Sendable {
    var until: Date
    var error: any Error
}

/// What a request does next.
enum CredentialDecision<A: Authenticator>: Sendable {
    /// Use this credential now.
    case ready(A, A.Credential)
    /// Wait for the shared refresh.
    case wait(A, SharedRefresh<A.Credential>)
    /// Let the actor read the store (or save the initial credential) first.
    case settle
    /// Fail with this error (no authenticator, too many refreshes, a backoff, a failed refresh).
    case fail(any Error)
}

/// The refreshes answered by the server within the window of a ``RefreshLimit``.
struct RefreshHistory: Sendable {
    private var dates: [Date] = []

    /// Whether another refresh at `now` would exceed `limit`.
    mutating func isExhausted(at now: Date, within limit: RefreshLimit) -> Bool {
        dates.removeAll { now.timeIntervalSince($0) >= limit.window }
        return dates.count >= limit.maximumCount
    }

    /// Records a refresh that the server answered.
    mutating func record(at now: Date) {
        dates.append(now)
    }
}

/// The secrets of the last credentials that were replaced, newest last, at most
/// ``maximumCount`` of them; shown to `dump` and debuggers only as a count.
struct SupersededSecrets: Sendable, CustomReflectable {
    /// More than a burst of refreshes within one request's lifetime can replace (the default
    /// ``RefreshLimit`` allows 5).
    static var maximumCount: Int { 16 }
    private var credentials: [[String]] = []

    /// Keeps `secrets` of one replaced credential, forgetting the oldest beyond ``maximumCount``.
    mutating func append(_ secrets: [String]) {
        if credentials.count >= Self.maximumCount { credentials.removeFirst() }
        credentials.append(secrets)
    }

    /// Every secret kept, newest credential first.
    var values: [String] { Array(credentials.reversed().joined()) }

    /// How many credentials are kept; no secret.
    var customMirror: Mirror { Mirror(self, children: ["count": credentials.count]) }
}
