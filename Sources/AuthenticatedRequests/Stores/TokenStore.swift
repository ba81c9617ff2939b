import Foundation

/// Where credentials are kept across launches, one entry per key.
///
/// An ``AuthenticationInterceptor`` writes every change of its credential here (obtained,
/// refreshed, rotated, cleared) as JSON. Keys name a client at a server (and, for several
/// accounts, the user), so two sessions never share an entry. ``InMemoryTokenStore`` and
/// ``FileTokenStore`` are provided; a Keychain or database store is a small conformance.
///
/// ## Refreshes coordinated across processes
///
/// A store that several processes (or machines) share can coordinate their refreshes, so that
/// one refresh token is spent once: implement ``withRefreshLock(forKey:timeout:_:)`` with a lock
/// that dies with its holder (`flock`), or a lease that expires unless its holder renews it (a
/// database row), and set ``coordinatesProcesses``. The
/// interceptor then runs one algorithm for every such store:
/// 1. A request with a valid credential in memory touches no store.
/// 2. A refresh takes the lock for the entry and re-reads it; a newer, valid credential that
///    another process stored is used instead of refreshing.
/// 3. Otherwise it records that a refresh is in flight, refreshes from the newest stored
///    credential, and writes the result only if the entry still holds the credential it refreshed
///    from (a fenced write); then it releases the lock.
/// 4. `invalid_grant` clears the entry only if it still holds the rejected credential.
/// 5. A process that died between sending a refresh and storing its result leaves the in-flight
///    record behind: the next refresh reports ``AuthenticationError/Code/refreshOutcomeUnknown``
///    instead of spending a refresh token that may already be spent, or signing out.
///
/// Waiting for the lock is bounded; at the bound the request fails, it never refreshes
/// uncoordinated. The defaults suit a store that one process uses: no lock.
public protocol TokenStore: Sendable {
    /// The entry for `key`, or `nil` when there is none.
    func load(forKey key: String) async throws -> Data?
    /// Replaces the entry for `key` with `data`.
    func save(_ data: Data, forKey key: String) async throws
    /// Removes the entry for `key`; no error when there is none.
    func removeValue(forKey key: String) async throws

    /// Whether other processes may use the same entries at the same time, so that refreshes must
    /// be coordinated through ``withRefreshLock(forKey:timeout:_:)``. `false` by default.
    var coordinatesProcesses: Bool { get }

    /// Runs `body` while holding the refresh lock of the entry `key`, waiting at most `timeout`
    /// seconds for it.
    ///
    /// The lock must be released when its holder dies, at once or when its lease expires (a
    /// crashed process must not lock everyone out). The default runs `body` at once, for stores
    /// that one process uses.
    /// - Throws: ``TokenStoreError/Code/lockTimedOut`` when the lock could not be had in time.
    func withRefreshLock<Value: Sendable>(
        forKey key: String,
        timeout: TimeInterval,
        _ body: @Sendable () async throws -> Value
    ) async throws -> Value

    /// Like ``withRefreshLock(forKey:timeout:_:)``, for stores whose waiters can read another
    /// process's result at the same time rather than one after another: when another process
    /// holds the lock, wait until it releases it (at most `timeout`) without taking it, and call
    /// `adopt`; a value it returns is the result, and the lock is never taken. When it returns
    /// `nil` (the other refresh failed), take the lock and run `body` as usual.
    ///
    /// `adopt` only reads the store. The default ignores it and calls
    /// ``withRefreshLock(forKey:timeout:_:)``.
    func withRefreshLock<Value: Sendable>(
        forKey key: String,
        timeout: TimeInterval,
        adoptingAfterWait adopt: @Sendable () async throws -> Value?,
        _ body: @Sendable () async throws -> Value
    ) async throws -> Value
}

extension TokenStore {
    /// `false`: a store that one process uses.
    public var coordinatesProcesses: Bool { false }

    /// Runs `body` at once, without a lock.
    public func withRefreshLock<Value: Sendable>(
        forKey key: String,
        timeout: TimeInterval,
        _ body: @Sendable () async throws -> Value
    ) async throws -> Value {
        try await body()
    }

    /// Ignores `adopt`: ``withRefreshLock(forKey:timeout:_:)``.
    public func withRefreshLock<Value: Sendable>(
        forKey key: String,
        timeout: TimeInterval,
        adoptingAfterWait adopt: @Sendable () async throws -> Value?,
        _ body: @Sendable () async throws -> Value
    ) async throws -> Value {
        try await withRefreshLock(forKey: key, timeout: timeout, body)
    }
}

/// Why a ``TokenStore`` failed.
public struct TokenStoreError: Error, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The entry exists but is not a readable credential; it was left untouched.
        public static let corrupt = Code("corrupt entry")
        /// Reading, writing or removing failed; see ``TokenStoreError/underlyingError``.
        public static let ioFailed = Code("input/output failed")
        /// The refresh lock of the entry could not be had in time (another process holds it, e.g.
        /// while it refreshes); nothing was refreshed.
        public static let lockTimedOut = Code("lock timed out")
        /// The store's location is not safe for secrets (a folder of another user, or not a
        /// folder); nothing was written.
        public static let insecureLocation = Code("insecure location")
        /// The entry exists but cannot be decrypted with the store's keys: a wrong key, or one
        /// that was removed before the entry was re-encrypted. It was left untouched.
        public static let undecryptable = Code("undecryptable entry")
        /// The store (a database) could not be reached in time; nothing was read or written.
        public static let unavailable = Code("store unavailable")
        /// The store's configuration cannot work (a table name the database reads otherwise);
        /// the message says what to change. Nothing was read or written.
        public static let misconfigured = Code("store misconfigured")
        /// A write under the entry's refresh lock was refused because another process had taken
        /// the lock over (this one could not renew it in time): the write would have landed over
        /// the newer holder's. Nothing was written; the newer holder's refresh stands.
        public static let leaseLost = Code("refresh lease lost")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// The entry's key.
    public let key: String
    /// The file, for a ``FileTokenStore``; the table, for a database store.
    public let path: String?
    /// The error behind this one (a POSIX or decoding error).
    public let underlyingError: (any Error)?

    /// Creates an error.
    public init(code: Code, key: String, path: String? = nil, underlyingError: (any Error)? = nil) {
        self.code = code
        self.key = key
        self.path = path
        self.underlyingError = underlyingError
    }

    /// `TokenStoreError(corrupt entry) for 'key' at path: underlying`.
    public var description: String {
        var text = "TokenStoreError(\(code)) for '\(key)'"
        if let path { text += " at \(path)" }
        if let underlyingError { text += ": \(Redaction.redact(String(describing: underlyingError)))" }
        return text
    }
}
