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
    ///     client: postgres,  // a PostgresClient your service runs
    ///     key: TokenEncryptionKey(id: "2026-11", base64: secrets.tokenKey))
    /// try await store.migrate()  // once at start-up; or apply schemaSQL yourself
    /// let authenticator = OAuthAuthenticator(flow: flow, store: store)
    /// ```
    ///
    /// - **Steady state costs nothing.** A request with a valid token in memory does not touch
    ///   the database. Replicas learn of a new token when they need one (expiry, a 401).
    /// - **One refresh per grant.** A refresh holds a lease on the entry: a row in
    ///   `<table>_leases` with an expiry on the database's clock, renewed while the refresh runs.
    ///   Other replicas poll for its release with short statements and hold no connection in
    ///   between; a replica that dies leaves a lease that expires after
    ///   ``Configuration/leaseDuration``. Every statement is a transaction of its own, so the store
    ///   works unchanged through PgBouncer's transaction pooling. The engine re-reads the entry
    ///   under the lease, adopts a token another replica stored, and writes its own result only
    ///   over the token it refreshed from.
    /// - **Sealed at rest.** Entries are sealed with AES-256-GCM under ``TokenEncryptionKey``,
    ///   bound to their table and key; the table holds no plaintext token. A wrong key is
    ///   `TokenStoreError.Code.undecryptable`, never garbage.
    /// - **Database down.** Requests with a valid token go on. A refresh fails after
    ///   ``Configuration/operationTimeout`` (no connection) or ``Configuration/responseTimeout``
    ///   (a connection that answers nothing) with `TokenStoreError.Code.unavailable`
    ///   rather than refreshing uncoordinated, which would break refresh token rotation; opt in
    ///   to ``UnavailablePolicy/refreshUncoordinated`` for grants without rotation.
    ///
    /// Enable the package trait `PostgreSQL` to build it.
    public struct PostgresTokenStore: TokenStore {
        /// Settings of the store.
        public struct Configuration: Sendable {
            /// The table of entries; letters, digits and `_`, starting with a letter or `_`.
            public var tableName: String
            /// The longest wait for a connection or a statement, in seconds (the wait for another
            /// replica's refresh is bounded by the authenticator's `storeLockTimeout` instead).
            public var operationTimeout: TimeInterval
            /// The longest wait for the database's answer to a refresh's first statement, which
            /// never waits for another replica, in seconds; 10 unless given. A database that
            /// answers nothing (paused, behind a dead link, or a pooler in front of one) is
            /// reported `TokenStoreError.Code.unavailable` after this long, whatever the lock
            /// timeout; a lease another replica holds is told apart by that answer and waited for
            /// up to the authenticator's `storeLockTimeout`. Longer than ``operationTimeout``: a
            /// healthy server with many replicas starting at once on busy cores was seen taking
            /// over 5 s.
            public var responseTimeout: TimeInterval
            /// How long a refresh lease lasts without renewal, in seconds; 10 unless given. The
            /// refreshing replica renews it every third of this while it waits for the
            /// authorization server, so a slow refresh keeps it; a replica that died (or lost the
            /// database) loses it after at most this long, and another replica takes over.
            public var leaseDuration: TimeInterval
            /// What a refresh does when the database cannot be reached.
            public var whenUnavailable: UnavailablePolicy
            /// Where PostgresNIO's own diagnostics go; nowhere by default.
            public var logger: Logger

            /// Creates settings.
            /// - Parameters:
            ///   - tableName: The table of entries; `authreq_tokens` by default.
            ///   - operationTimeout: The longest wait for a connection or a statement, in seconds.
            ///   - responseTimeout: The longest wait for the database's first answer during a
            ///     refresh, in seconds: how soon a database that answers nothing is reported.
            ///   - leaseDuration: How long a refresh lease lasts without renewal, in seconds: how
            ///     soon another replica takes over from one that died while it refreshed.
            ///   - whenUnavailable: What a refresh does when the database cannot be reached.
            ///   - logger: Where PostgresNIO's diagnostics go.
            public init(
                tableName: String = "authreq_tokens",
                operationTimeout: TimeInterval = 5,
                responseTimeout: TimeInterval = 10,
                leaseDuration: TimeInterval = 10,
                whenUnavailable: UnavailablePolicy = .failRefresh,
                logger: Logger = Logger(label: "authreq.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
            ) {
                self.tableName = tableName
                self.operationTimeout = operationTimeout
                self.responseTimeout = responseTimeout
                self.leaseDuration = leaseDuration
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
            /// tokens that do not rotate).
            public static let refreshUncoordinated = UnavailablePolicy(name: "refreshUncoordinated")
        }

        /// The connection pool; the application runs it (`client.run()`).
        public let client: PostgresClient
        /// The key that seals new entries.
        public let key: TokenEncryptionKey
        /// Older keys that still open entries they sealed, during a rotation.
        public let previousKeys: [TokenEncryptionKey]
        /// The store's settings.
        public let configuration: Configuration
        /// Keeps this store's writes of an entry in order (copies of the store share it).
        let writes = WriteOrder()

        /// Creates a store.
        /// - Parameters:
        ///   - client: The connection pool; the application runs it.
        ///   - key: The key that seals new entries.
        ///   - previousKeys: Keys that sealed existing entries, during a rotation.
        ///   - configuration: The table, timeouts and the policy when the database is unavailable.
        /// - Throws: ``TokenEncryptionKeyError`` when two keys share an id; `TokenStoreError`
        ///   `.ioFailed` for an invalid table name.
        public init(
            client: PostgresClient,
            key: TokenEncryptionKey,
            previousKeys: [TokenEncryptionKey] = [],
            configuration: Configuration = Configuration()
        ) throws {
            let ids = [key.id] + previousKeys.map(\.id)
            guard Set(ids).count == ids.count else {
                throw TokenEncryptionKeyError(message: "Two keys share an id; each key needs its own.")
            }
            try Schema.validate(tableName: configuration.tableName)
            self.client = client
            self.key = key
            self.previousKeys = previousKeys
            self.configuration = configuration
        }

        var table: String { configuration.tableName }
        var logger: Logger { configuration.logger }

        // MARK: - TokenStore

        /// `true`: replicas on other machines share the entries.
        public var coordinatesProcesses: Bool { true }

        /// The entry for `key`, opened; `nil` when there is none.
        public func load(forKey key: String) async throws -> Data? {
            if Self.isUncoordinated { return nil }
            let row = try await database(key, "read the entry") { () -> (String, Data)? in
                let rows = try await query(
                    "SELECT key_id, sealed FROM \(unescaped: table) WHERE store_key = \(key)")
                for try await row in rows.decode((String, Data).self) { return row }
                return nil
            }
            guard let (keyID, sealed) = row else { return nil }
            return try open(sealed, keyID: keyID, forKey: key)
        }

        /// Seals `data` with ``key`` and writes it in one statement (never a torn entry).
        public func save(_ data: Data, forKey key: String) async throws {
            if Self.isUncoordinated { return }
            let sealed = try seal(data, forKey: key)
            let keyID = self.key.id
            try await write(key, "write the entry") { write in
                try await committed(write) { connection in
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
        }

        /// Removes the entry for `key`.
        public func removeValue(forKey key: String) async throws {
            if Self.isUncoordinated { return }
            try await write(key, "remove the entry") { write in
                try await committed(write) { connection in
                    try await connection.query(
                        "DELETE FROM \(unescaped: table) WHERE store_key = \(key)", logger: logger
                    ).drain()
                }
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

        /// Runs `query`, which reads, on the connection the refreshing replica holds
        /// (``pinnedConnection``), or else on any pooled connection. Statements that change rows go
        /// through ``committed(_:_:)``.
        func query(_ query: PostgresQuery) async throws -> PostgresRowSequence {
            if let connection = Self.pinnedConnection {
                return try await connection.query(query, logger: logger)
            }
            return try await client.query(query, logger: logger)
        }

        /// Runs `statement`, which changes rows, in a transaction of its own on the pinned
        /// connection or a pooled one, and returns once the database has answered its `COMMIT`.
        ///
        /// A statement's answer alone does not prove its change was kept: PostgreSQL answers a
        /// statement of an implicit transaction before it commits it (at the protocol's Sync), and
        /// a backend cut in between (terminated, its server shutting down) sends that answer with
        /// its last message and drops the change. A write counted as done then was lost, and a
        /// refresh lease counted as held was invisible to the other replicas. The answer to
        /// `COMMIT` comes only after the commit.
        /// With `write`, the transaction asks it before committing (``WriteOrder``).
        func committed<Value: Sendable>(
            _ write: WriteOrder.Write? = nil,
            _ statement: @escaping @Sendable (PostgresConnection) async throws -> Value
        ) async throws -> Value {
            if let connection = Self.pinnedConnection {
                return try await connection.withTransaction(logger: logger) {
                    try await Self.run(statement, then: write, on: $0)
                }
            }
            return try await client.withTransaction(logger: logger) {
                try await Self.run(statement, then: write, on: $0)
            }
        }

        /// The body of ``committed(_:_:)``'s transaction: `statement`, then asking `write` before
        /// the `COMMIT`.
        private static func run<Value: Sendable>(
            _ statement: @Sendable (PostgresConnection) async throws -> Value,
            then write: WriteOrder.Write?,
            on connection: PostgresConnection
        ) async throws -> Value {
            let value = try await statement(connection)
            try write?.mayCommit()
            return value
        }

        /// The connection that the replica holding a refresh lease keeps for its statements
        /// until it releases the lease, so that its write never waits for a free connection
        /// slot while a fleet's waiters poll.
        @TaskLocal static var pinnedConnection: PostgresConnection?

        /// Runs `operation` within ``Configuration/operationTimeout``, turning failures into
        /// `TokenStoreError`s: `.unavailable` when the database cannot be reached, `.ioFailed`
        /// with the server's message otherwise.
        /// `step` names the statement in the error when it timed out.
        @discardableResult
        func database<Value: Sendable>(
            _ key: String,
            _ step: String,
            _ operation: @escaping @Sendable () async throws -> Value
        ) async throws -> Value {
            do {
                return try await Bounded.run(within: configuration.operationTimeout, operation)
            } catch let error as TokenStoreError {
                throw error
            } catch is Bounded.TimedOut {
                throw timedOut(step, after: configuration.operationTimeout, key: key)
            } catch {
                throw storeError(error, key: key)
            }
        }

        /// `.unavailable`: no answer to `step` within `seconds`.
        func timedOut(_ step: String, after seconds: TimeInterval, key: String) -> TokenStoreError {
            TokenStoreError(
                code: .unavailable, key: key, path: table,
                underlyingError: DatabaseError(
                    sqlState: "", message: "no answer within \(seconds) s to \(step)", isStoreRefusal: false))
        }

        /// Runs the write `operation` like ``database(_:_:)``, in ``WriteOrder`` after this store's
        /// earlier writes of `key`: a write whose caller timed out cannot land over a newer one.
        /// `operation` passes its ``WriteOrder/Write`` to ``committed(_:_:)``.
        func write(
            _ key: String, _ step: String, _ operation: @escaping @Sendable (WriteOrder.Write) async throws -> Void
        ) async throws {
            do {
                try await writes.run(key, within: configuration.operationTimeout, operation)
            } catch is Bounded.TimedOut {
                throw timedOut(step, after: configuration.operationTimeout, key: key)
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
                // Class 08 (connection exception) and 57P (the server shutting down or starting):
                // the database is away, not wrong.
                let code: TokenStoreError.Code =
                    sqlState.hasPrefix("08") || sqlState.hasPrefix("57P") ? .unavailable : .ioFailed
                return TokenStoreError(
                    code: code, key: key, path: table,
                    underlyingError: DatabaseError(sqlState: sqlState, message: message))
            }
            if error is CancellationError {
                return TokenStoreError(code: .ioFailed, key: key, path: table, underlyingError: error)
            }
            return TokenStoreError(code: .unavailable, key: key, path: table, underlyingError: DatabaseError(error))
        }

        /// What to fix for a SQLSTATE that no retry cures: the store's role or table is wrong, not
        /// the database away. Such a failure is ``TokenStoreError/Code/misconfigured``, reported at
        /// once, and never leads to a refresh without the lease, whatever
        /// ``Configuration/whenUnavailable`` says. `nil` for any other state.
        static func configurationProblem(sqlState: String) -> String? {
            switch sqlState {
            case _ where sqlState.hasPrefix("28"):
                "The database refused the role's login: check the user and password of the store's client."
            case "42501":
                "The role lacks a privilege: grant SELECT, INSERT, UPDATE, DELETE on the table and its _leases "
                    + "table (and CREATE on the schema to run migrate())."
            case "42P01", "42703":
                "The table is missing or not the store's: run migrate() (or PostgresTokenStore.schemaSQL()) "
                    + "for this table name."
            case "3F000", "3D000":
                "The schema or database does not exist: check the client's configuration."
            default:
                nil
            }
        }

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
