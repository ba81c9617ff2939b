#if PostgreSQL
    import AuthenticatedRequests
    import Crypto
    import Foundation
    import Logging
    import PostgresNIO

    /// A `TokenStore` on PostgreSQL, shared by every replica of a service:
    /// one replica refreshes a grant while the others wait and then use its result.
    ///
    /// ```swift
    /// let store = try PostgresTokenStore(
    ///     connection: .init(host: "db.internal", username: "tokens", password: secrets.dbPassword,
    ///                       database: "app", tls: .require(try .init(configuration: .makeClientConfiguration()))),
    ///     key: TokenEncryptionKey(id: "2026-11", base64: secrets.tokenKey))
    /// try await store.migrate()  // once at start-up; or apply schemaSQL yourself
    /// let authenticator = OAuthAuthenticator(flow: flow, store: store)
    /// ```
    ///
    /// - **Steady state costs nothing.** A request with a valid token in memory does not touch
    ///   the database. Replicas learn of a new token when they need one (expiry, a 401).
    /// - **One refresh per grant.** A refresh holds a lease on the entry: a row in
    ///   `<table>_leases` with an expiry on the database's clock, renewed on a connection of its
    ///   own while the refresh runs. Other replicas poll for its release with short statements
    ///   and hold no connection in between; a replica that dies leaves a lease that expires after
    ///   ``Configuration/leaseDuration``. Every statement is a transaction of its own, so the store
    ///   works unchanged through PgBouncer's transaction pooling. The engine re-reads the entry
    ///   under the lease, adopts a token another replica stored, and writes its own result only
    ///   over the token it refreshed from, and only while it still holds the lease.
    /// - **Its own few connections.** The store opens at most
    ///   ``Configuration/maximumConnections`` connections when a statement needs one and closes
    ///   them ``Configuration/connectionIdleTimeout`` after their last, so a fleet of hundreds of
    ///   replicas fits PostgreSQL's default 100 connection slots.
    /// - **Busy is not down.** An attempt refused for a moment (too many connections, a server
    ///   restarting, a pooler's queue timeout, a serialization failure, a lost connection) is tried
    ///   again with backoff and jitter until the operation's deadline.
    /// - **Wrong is not down.** A refused login, a missing privilege, table or database is
    ///   `TokenStoreError.Code.misconfigured` at once, never an uncoordinated refresh.
    /// - **Sealed at rest.** Entries are sealed with AES-256-GCM under ``TokenEncryptionKey``,
    ///   bound to their table and key; the table holds no plaintext token. A wrong key is
    ///   `TokenStoreError.Code.undecryptable`, never garbage.
    /// - **Database down.** Requests with a valid token go on. A refresh fails when the database
    ///   answered nothing for ``Configuration/responseTimeout`` with
    ///   `TokenStoreError.Code.unavailable` rather than refreshing uncoordinated, which would
    ///   break refresh token rotation; opt in to ``UnavailablePolicy/refreshUncoordinated`` for
    ///   grants without rotation.
    /// - **Observable.** Operations, retries by cause, lease waits and takeovers, and errors by
    ///   code go to swift-metrics; each operation is a swift-distributed-tracing span. Both are
    ///   no-ops until the application bootstraps a backend.
    ///
    /// Enable the package trait `PostgreSQL` to build it.
    public struct PostgresTokenStore: TokenStore {
        /// Settings of the store.
        public struct Configuration: Sendable {
            /// The table of entries; letters, digits and `_`, starting with a letter or `_`.
            public var tableName: String
            /// The deadline of one store operation (a read, a write, taking the lease), retries
            /// included, in seconds; 30 unless given. A busy database (all connection slots
            /// taken, a pooler's queue) is tried again until then. The wait for another replica's
            /// refresh is bounded by the authenticator's `storeLockTimeout` instead.
            public var operationTimeout: TimeInterval
            /// How long a database may answer nothing before it is
            /// `TokenStoreError.Code.unavailable`, in seconds; 10 unless given. A database that
            /// refuses connections, is paused, or sits behind a dead link is reported after this
            /// long, whatever ``operationTimeout`` says.
            public var responseTimeout: TimeInterval
            /// How long a refresh lease lasts without renewal, in seconds; 10 unless given. The
            /// refreshing replica renews it every third of this, on a connection of its own, while
            /// it refreshes, so a slow refresh keeps it; a replica that died (or lost the database)
            /// loses it after at most this long, and another replica takes over.
            public var leaseDuration: TimeInterval
            /// The most connections the store opens at once; 4 unless given. A refresh holds one
            /// for its statements and renews its lease on another.
            public var maximumConnections: Int
            /// How long a connection stays open after its last statement, in seconds; 0.05 unless
            /// given. Short, so that replicas waiting for a refresh hold no connection slot
            /// between their polls.
            public var connectionIdleTimeout: TimeInterval
            /// What a refresh does when the database cannot be reached.
            public var whenUnavailable: UnavailablePolicy
            /// Where PostgresNIO's own diagnostics go; nowhere by default.
            public var logger: Logger

            /// Creates settings.
            /// - Parameters:
            ///   - tableName: The table of entries; `authreq_tokens` by default.
            ///   - operationTimeout: The deadline of one store operation, retries included, in seconds.
            ///   - responseTimeout: How long the database may answer nothing before it is
            ///     reported unavailable, in seconds.
            ///   - leaseDuration: How long a refresh lease lasts without renewal, in seconds: how
            ///     soon another replica takes over from one that died while it refreshed.
            ///   - maximumConnections: The most connections the store opens at once.
            ///   - connectionIdleTimeout: How long a connection stays open after its last
            ///     statement, in seconds.
            ///   - whenUnavailable: What a refresh does when the database cannot be reached.
            ///   - logger: Where PostgresNIO's diagnostics go.
            public init(
                tableName: String = "authreq_tokens",
                operationTimeout: TimeInterval = 30,
                responseTimeout: TimeInterval = 10,
                leaseDuration: TimeInterval = 10,
                maximumConnections: Int = 4,
                connectionIdleTimeout: TimeInterval = 0.05,
                whenUnavailable: UnavailablePolicy = .failRefresh,
                logger: Logger = Logger(label: "authreq.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
            ) {
                self.tableName = tableName
                self.operationTimeout = operationTimeout
                self.responseTimeout = responseTimeout
                self.leaseDuration = leaseDuration
                self.maximumConnections = maximumConnections
                self.connectionIdleTimeout = connectionIdleTimeout
                self.whenUnavailable = whenUnavailable
                self.logger = logger
            }
        }

        /// What a refresh does when the database cannot be reached.
        public struct UnavailablePolicy: Hashable, Sendable {
            private let name: String
            /// Fail the refresh with `TokenStoreError.Code.unavailable`;
            /// the credential is kept. Right for every grant with refresh token rotation.
            public static let failRefresh = UnavailablePolicy(name: "failRefresh")
            /// Refresh without the lease and keep the result in memory only. Only for grants whose
            /// refresh can safely run on several replicas at once (client credentials, refresh
            /// tokens that do not rotate). A store that is misconfigured (a refused login, a
            /// missing privilege) never refreshes without the lease, whatever this says.
            public static let refreshUncoordinated = UnavailablePolicy(name: "refreshUncoordinated")
        }

        /// The key that seals new entries.
        public let key: TokenEncryptionKey
        /// Older keys that still open entries they sealed, during a rotation.
        public let previousKeys: [TokenEncryptionKey]
        /// The store's settings.
        public let configuration: Configuration
        /// The store's connections (copies of the store share them).
        let connections: ConnectionPool
        /// Keeps this store's writes of an entry in order (copies of the store share it).
        let writes = WriteOrder()
        let metrics: StoreMetrics

        /// Creates a store that connects to the database with `connection`.
        ///
        /// The store opens its own connections (PostgresNIO's `PostgresConnection`), at most
        /// ``Configuration/maximumConnections`` at once, each closed soon after its last statement;
        /// it needs no `run()`. Call ``shutdown()`` to close them before the process ends.
        ///
        /// - Parameters:
        ///   - connection: Where and as whom to connect: host (or socket), user, password,
        ///     database and TLS, as for a `PostgresConnection`.
        ///   - key: The key that seals new entries.
        ///   - previousKeys: Keys that sealed existing entries, during a rotation.
        ///   - configuration: The table, timeouts, connections and the policy when the database is
        ///     unavailable.
        /// - Throws: ``TokenEncryptionKeyError`` when two keys share an id; `TokenStoreError`
        ///   `.misconfigured` for a table name PostgreSQL would read otherwise, or a configuration
        ///   that cannot work (no connection allowed, a non-positive timeout).
        public init(
            connection: PostgresConnection.Configuration,
            key: TokenEncryptionKey,
            previousKeys: [TokenEncryptionKey] = [],
            configuration: Configuration = Configuration()
        ) throws {
            let ids = [key.id] + previousKeys.map(\.id)
            guard Set(ids).count == ids.count else {
                throw TokenEncryptionKeyError(message: "Two keys share an id; each key needs its own.")
            }
            try Schema.validate(tableName: configuration.tableName)
            try Self.validate(configuration)
            self.key = key
            self.previousKeys = previousKeys
            self.configuration = configuration
            self.connections = ConnectionPool(
                configuration: connection,
                maximum: configuration.maximumConnections,
                idleTimeout: .milliseconds(Int64((configuration.connectionIdleTimeout * 1000).rounded())),
                logger: configuration.logger)
            self.metrics = StoreMetrics(table: configuration.tableName)
        }

        /// Refuses settings no fleet can work with, saying what to set.
        static func validate(_ configuration: Configuration) throws {
            func refuse(_ message: String) -> TokenStoreError {
                TokenStoreError(
                    code: .misconfigured, key: "", path: configuration.tableName,
                    underlyingError: DatabaseError(sqlState: "", message: message))
            }
            guard configuration.maximumConnections >= 2 else {
                throw refuse(
                    "maximumConnections is \(configuration.maximumConnections): a refresh needs 2 "
                        + "(its statements and its lease's renewal). Set 2 or more.")
            }
            for (name, value) in [
                ("operationTimeout", configuration.operationTimeout),
                ("responseTimeout", configuration.responseTimeout),
                ("leaseDuration", configuration.leaseDuration),
            ] where !(value > 0 && value.isFinite) {
                throw refuse("\(name) is \(value): set a positive number of seconds.")
            }
            guard configuration.connectionIdleTimeout >= 0, configuration.connectionIdleTimeout.isFinite else {
                throw refuse("connectionIdleTimeout is \(configuration.connectionIdleTimeout): set 0 or more seconds.")
            }
        }

        var table: String { configuration.tableName }
        var logger: Logger { configuration.logger }

        /// Closes the store's idle connections and refuses further statements; for a process
        /// about to end. Statements running finish first.
        public func shutdown() async {
            await connections.shutdown()
        }

        // MARK: - TokenStore

        /// `true`: replicas on other machines share the entries.
        public var coordinatesProcesses: Bool { true }

        /// The entry for `key`, opened; `nil` when there is none.
        public func load(forKey key: String) async throws -> Data? {
            if Self.isUncoordinated { return nil }
            let row = try await read(key, .load, "read the entry", until: Self.adoptDeadline)
            guard let (keyID, sealed) = row else { return nil }
            return try open(sealed, keyID: keyID, forKey: key)
        }

        /// The entry's row, read until `deadline` (the operation's own by default).
        func read(
            _ key: String, _ operation: StoreMetrics.Operation, _ step: String,
            until deadline: ContinuousClock.Instant? = nil
        ) async throws -> (String, Data)? {
            let table = self.table
            let logger = self.logger
            return try await database(key, operation, step, until: deadline) { connection -> (String, Data)? in
                let rows = try await connection.query(
                    "SELECT key_id, sealed FROM \(unescaped: table) WHERE store_key = \(key)", logger: logger)
                for try await row in rows.decode((String, Data).self) { return row }
                return nil
            }
        }

        /// Seals `data` with ``key`` and writes it in one statement (never a torn entry). Under a
        /// refresh lease, the write commits only while that lease is still this replica's;
        /// otherwise it throws `TokenStoreError` `.leaseLost`.
        public func save(_ data: Data, forKey key: String) async throws {
            if Self.isUncoordinated { return }
            let sealed = try seal(data, forKey: key)
            let keyID = self.key.id
            let (table, logger) = (self.table, self.logger)
            try await write(key, .save, "write the entry") { connection in
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: table) (store_key, key_id, sealed, updated_at)
                    VALUES (\(key), \(keyID), \(sealed), now())
                    ON CONFLICT (store_key) DO UPDATE
                    SET key_id = EXCLUDED.key_id, sealed = EXCLUDED.sealed, updated_at = now()
                    """, logger: logger
                ).drain()
            }
        }

        /// Removes the entry for `key`; under a refresh lease, only while it is still this
        /// replica's.
        public func removeValue(forKey key: String) async throws {
            if Self.isUncoordinated { return }
            let (table, logger) = (self.table, self.logger)
            try await write(key, .remove, "remove the entry") { connection in
                try await connection.query(
                    "DELETE FROM \(unescaped: table) WHERE store_key = \(key)", logger: logger
                ).drain()
            }
        }

        // MARK: - Sealing

        /// The table and entry key that a sealed entry is bound to.
        private func sealingContext(forKey key: String) -> Data {
            Data("authreq-token-store\u{0}\(table)\u{0}\(key)".utf8)
        }

        func seal(_ data: Data, forKey key: String) throws -> Data {
            do {
                return try self.key.seal(data, context: sealingContext(forKey: key))
            } catch {
                throw TokenStoreError(code: .ioFailed, key: key, path: table, underlyingError: error)
            }
        }

        func open(_ sealed: Data, keyID: String, forKey key: String) throws -> Data {
            guard let sealer = ([self.key] + previousKeys).first(where: { $0.id == keyID }) else {
                throw TokenStoreError(
                    code: .undecryptable, key: key, path: table,
                    underlyingError: TokenEncryptionKeyError(
                        message: "The entry was sealed with key '\(keyID)', which is not configured "
                            + "(keys: \(([self.key] + previousKeys).map(\.id).joined(separator: ", ")))."))
            }
            guard let plaintext = sealer.open(sealed, context: sealingContext(forKey: key)) else {
                throw TokenStoreError(
                    code: .undecryptable, key: key, path: table,
                    underlyingError: TokenEncryptionKeyError(
                        message: "Key '\(keyID)' does not open the entry: a different key under the same id, "
                            + "or an entry that was altered or moved."))
            }
            return plaintext
        }

        // MARK: - Database calls

        /// Runs `operation` on a connection until it succeeds, fails for good, or `deadline`
        /// (``Configuration/operationTimeout`` from now unless given) passes; in a span, timed.
        ///
        /// With `waitsForOthers`, a statement that waits for other replicas (a lock) is bounded by
        /// the deadline alone. A ``TransientFailure`` is tried again after a ``Backoff``, while `mayRetry` allows
        /// (a write that asked to commit may have committed). The operation ends
        /// `TokenStoreError` `.unavailable` once the database has answered nothing for
        /// ``Configuration/responseTimeout``, or at the deadline with the last failure; every
        /// other failure ends it at once (``storeError(_:key:)``). `step` names the statement
        /// in the error when it timed out.
        @discardableResult
        func database<Value: Sendable>(
            _ key: String,
            _ operation: StoreMetrics.Operation,
            _ step: String,
            until deadline: ContinuousClock.Instant? = nil,
            waitsForOthers: Bool = false,
            mayRetry: @escaping @Sendable () -> Bool = { true },
            _ body: @escaping @Sendable (PostgresConnection) async throws -> Value
        ) async throws -> Value {
            let deadline = deadline ?? .now + .seconds(configuration.operationTimeout)
            let held = Self.heldLease
            let (connections, metrics) = (self.connections, self.metrics)
            // A statement that waits for other replicas on purpose (migrate()'s lock) is silent
            // while it waits: only the deadline bounds it.
            let responseTimeout = Duration.seconds(
                waitsForOthers ? configuration.operationTimeout : configuration.responseTimeout)
            return try await metrics.span(operation) {
                var lastAnswer = ContinuousClock.now
                var backoff = Backoff()
                var lastFailure: (any Error)?
                while true {
                    let limit = min(deadline, lastAnswer + responseTimeout)
                    let remaining = ContinuousClock.now.duration(to: limit)
                    guard remaining > .zero else {
                        throw lastFailure.map { storeError($0, key: key) }
                            ?? timedOut(step, after: ContinuousClock.now - lastAnswer, key: key)
                    }
                    do {
                        return try await Bounded.run(within: Self.seconds(remaining)) {
                            if let connection = held?.connection() {
                                do {
                                    return try await ConnectionPool.run(body, on: connection)
                                } catch {
                                    if !ConnectionPool.leavesConnectionUsable(error) { held?.dropConnection() }
                                    throw error
                                }
                            }
                            return try await connections.withConnection(body)
                        }
                    } catch is Bounded.TimedOut {
                        throw timedOut(step, after: ContinuousClock.now - lastAnswer, key: key)
                    } catch {
                        guard let transient = TransientFailure(error), mayRetry() else {
                            throw storeError(error, key: key)
                        }
                        if transient.answered { lastAnswer = .now }
                        lastFailure = error
                        let pause = min(backoff.next(), Self.seconds(ContinuousClock.now.duration(to: deadline)))
                        guard pause > 0 else { continue }
                        metrics.recordRetry(operation, cause: transient.cause)
                        try await Task.sleep(for: .seconds(pause))
                    }
                }
            }
        }

        static func seconds(_ duration: Duration) -> Double {
            let (seconds, attoseconds) = duration.components
            return Double(seconds) + Double(attoseconds) / 1e18
        }

        /// `.unavailable`: no answer to `step` for `duration`.
        func timedOut(_ step: String, after duration: Duration, key: String) -> TokenStoreError {
            let seconds = (Self.seconds(duration) * 10).rounded() / 10
            return TokenStoreError(
                code: .unavailable, key: key, path: table,
                underlyingError: DatabaseError(
                    sqlState: "", message: "no answer within \(seconds) s to \(step)", isStoreRefusal: false))
        }

        /// Runs the write `statement` in a transaction of its own, like ``database(_:_:_:until:mayRetry:_:)``,
        /// in ``WriteOrder`` after this store's earlier writes of `key` (a write whose caller timed
        /// out cannot land over a newer one), and returns once the database has answered its
        /// `COMMIT`. Under a refresh lease, the transaction commits only while the lease is still
        /// this replica's (``RefreshLease/fence(on:)``).
        ///
        /// A statement's answer alone does not prove its change was kept: PostgreSQL answers a
        /// statement of an implicit transaction before it commits it (at the protocol's Sync), and
        /// a backend cut in between (terminated, its server shutting down) sends that answer with
        /// its last message and drops the change. The answer to `COMMIT` comes only after the commit.
        func write(
            _ key: String,
            _ operation: StoreMetrics.Operation,
            _ step: String,
            _ statement: @escaping @Sendable (PostgresConnection) async throws -> Void
        ) async throws {
            // Every write of the holder, whatever its entry (the in-flight record has a key of its
            // own), commits only while the lease is still its own.
            let fence = Self.heldLease?.lease
            let logger = self.logger
            do {
                try await writes.run(key, within: configuration.operationTimeout + configuration.responseTimeout) {
                    write in
                    try await database(key, operation, step, mayRetry: { !write.askedToCommit }) { connection in
                        try await connection.withTransaction(logger: logger) { connection in
                            try await statement(connection)
                            try await fence?.fence(on: connection)
                            try write.mayCommit()
                        }
                    }
                }
            } catch is Bounded.TimedOut {
                throw timedOut(step, after: .seconds(configuration.operationTimeout), key: key)
            } catch {
                throw storeError(error, key: key)
            }
        }

        func storeError(_ error: any Error, key: String) -> TokenStoreError {
            if let error = error as? TokenStoreError { return error }
            // A transaction's failure wraps the statement's: the server's answer (a missing
            // privilege, say) is what the caller needs, not the transaction's envelope.
            if let error = error as? PostgresTransactionError,
                let inner = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
            {
                return storeError(inner, key: key)
            }
            if error is RefreshLease.Lost {
                metrics.recordLeaseLost()
                return TokenStoreError(
                    code: .leaseLost, key: key, path: table,
                    underlyingError: DatabaseError(
                        sqlState: "",
                        message: "another replica took over the refresh lease; the write was not committed"))
            }
            // The store's own refusal (a schema newer than this release): the database answered.
            if let error = error as? DatabaseError, error.isStoreRefusal {
                return TokenStoreError(code: .ioFailed, key: key, path: table, underlyingError: error)
            }
            if let error = error as? PSQLError, error.code == .server {
                let sqlState = error.serverInfo?[.sqlState] ?? ""
                let message = error.serverInfo?[.message] ?? ""
                if let fix = Self.configurationProblem(sqlState: sqlState) {
                    return TokenStoreError(
                        code: .misconfigured, key: key, path: table,
                        underlyingError: DatabaseError(sqlState: sqlState, message: "\(message). \(fix)"))
                }
                // Busy, restarting or cut off: the database is away for now, not wrong.
                let code: TokenStoreError.Code =
                    TransientFailure.cause(sqlState: sqlState) != nil ? .unavailable : .ioFailed
                return TokenStoreError(
                    code: code, key: key, path: table,
                    underlyingError: DatabaseError(sqlState: sqlState, message: message))
            }
            if let error = error as? PSQLError, Self.isConfigurationFailure(error.code) {
                return TokenStoreError(
                    code: .misconfigured, key: key, path: table,
                    underlyingError: DatabaseError(
                        sqlState: "",
                        message: "PostgreSQL connection: \(error.code). Check the connection's TLS and "
                            + "authentication settings against the server's."))
            }
            if error is CancellationError || error is ConnectionPool.ShutDown {
                return TokenStoreError(code: .ioFailed, key: key, path: table, underlyingError: error)
            }
            return TokenStoreError(code: .unavailable, key: key, path: table, underlyingError: DatabaseError(error))
        }

        /// Connection failures that no retry cures: the client and server disagree on TLS or
        /// on how to authenticate.
        static func isConfigurationFailure(_ code: PSQLError.Code) -> Bool {
            [.sslUnsupported, .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError].contains(code)
        }

        /// What to fix for a SQLSTATE that no retry cures: the store's role or table is wrong, not
        /// the database away. Such a failure is ``TokenStoreError/Code/misconfigured``, reported at
        /// once, and never leads to a refresh without the lease, whatever
        /// ``Configuration/whenUnavailable`` says. `nil` for any other state.
        static func configurationProblem(sqlState: String) -> String? {
            switch sqlState {
            case _ where sqlState.hasPrefix("28"):
                "The database refused the role's login: check the user and password of the store's connection."
            case "42501":
                "The role lacks a privilege: grant SELECT, INSERT, UPDATE, DELETE on the table and its _leases "
                    + "table (and CREATE on the schema to run migrate())."
            case "42P01", "42703":
                "The table is missing or not the store's: run migrate() (or PostgresTokenStore.schemaSQL()) "
                    + "for this table name."
            case "3F000", "3D000":
                "The schema or database does not exist: check the connection's configuration."
            default:
                nil
            }
        }

        /// The refresh lease this task holds, and the connection it keeps for its statements.
        @TaskLocal static var heldLease: HeldLease?

        /// Set while a refresh runs without the lease because the database is unavailable
        /// (``UnavailablePolicy/refreshUncoordinated``): reads find nothing, writes are skipped.
        @TaskLocal static var isUncoordinated = false
    }

    extension PostgresRowSequence {
        /// Reads the rest of the reply: PostgreSQL reports a statement's failure (a lock timeout, a
        /// constraint) after its row description, so a reply that is not read hides its error.
        func drain() async throws {
            for try await _ in self {}
        }
    }

    /// A database failure, described without the query's values.
    public struct DatabaseError: Error, CustomStringConvertible {
        /// The SQLSTATE code, when the server answered.
        public let sqlState: String
        /// The server's message, or what went wrong on the way to it.
        public let message: String

        /// Whether the store itself refused (the database answered, but not as this release
        /// expects), rather than a connection that failed.
        let isStoreRefusal: Bool

        init(sqlState: String, message: String, isStoreRefusal: Bool = true) {
            self.sqlState = sqlState
            self.message = message
            self.isStoreRefusal = isStoreRefusal
        }

        init(_ error: any Error) {
            self.sqlState = ""
            self.isStoreRefusal = false
            if let error = error as? PSQLError {
                self.message = "PostgreSQL connection: \(error.code)"
            } else if error is Bounded.TimedOut {
                self.message = "no answer in time"
            } else {
                self.message = String(describing: error)
            }
        }

        /// `SQLSTATE message`.
        public var description: String { sqlState.isEmpty ? message : "\(sqlState) \(message)" }
    }
#endif
