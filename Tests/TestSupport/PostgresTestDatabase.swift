#if PostgreSQL
    import AuthenticatedRequests
    import Foundation
    import Logging
    import PostgresNIO

    /// The PostgreSQL servers that `Scripts/test` starts (`Scripts/postgres.sh`): `shared`, which
    /// every test uses with a table of its own, and `faults`, which fault tests stop, start and cut.
    package enum PostgresTestDatabase {
        package static let environment = ProcessInfo.processInfo.environment
        package static let shared = environment["AUTHREQ_TEST_POSTGRES"].flatMap(URL.init(string:))
        package static let faults = environment["AUTHREQ_TEST_POSTGRES_FAULTS"].flatMap(URL.init(string:))
        /// The server with PostgreSQL's default `max_connections` (100), for the fleet tests.
        package static let fleet = environment["AUTHREQ_TEST_POSTGRES_FLEET"].flatMap(URL.init(string:))
        /// The same three databases through PgBouncer in transaction pooling mode (20 server
        /// connections each).
        package static let pgbouncer = environment["AUTHREQ_TEST_PGBOUNCER"].flatMap(URL.init(string:))
        package static let pgbouncerFaults = environment["AUTHREQ_TEST_PGBOUNCER_FAULTS"].flatMap(URL.init(string:))
        package static let pgbouncerFleet = environment["AUTHREQ_TEST_PGBOUNCER_FLEET"].flatMap(URL.init(string:))
        package static let isConfigured =
            shared != nil && faults != nil && fleet != nil && pgbouncer != nil && pgbouncerFaults != nil
            && pgbouncerFleet != nil
        package static let notRunReason =
            "AUTHREQ_TEST_POSTGRES is not set, so the PostgreSQL tests were NOT run. Run Scripts/test to run them."

        /// The stores' bound on a connection or statement in tests that are not about it: all
        /// suites run at once on two cores, and a first connection can take seconds then.
        package static let operationTimeout: TimeInterval = 30

        /// How a store connects to `url` (`postgres://user@host:port/database`).
        package static func connection(_ url: URL) -> PostgresConnection.Configuration {
            PostgresConnection.Configuration(
                host: url.host ?? "127.0.0.1",
                port: url.port ?? 5432,
                username: url.user ?? "authreq",
                password: url.password,
                database: String(url.path.dropFirst()),
                tls: .disable)
        }

        /// How a store connects to the database `client` (made by ``client(_:maximumConnections:)``)
        /// connects to.
        package static func connection(for client: PostgresClient) -> PostgresConnection.Configuration {
            guard let url = clientURLs.withLock({ $0[ObjectIdentifier(client)] }) else {
                preconditionFailure("not a client of PostgresTestDatabase.client(_:)")
            }
            return connection(url)
        }

        private static let clientURLs = Locked<[ObjectIdentifier: URL]>([:])

        /// A client for `url` (`postgres://user@host:port/database`), not yet running.
        package static func client(_ url: URL, maximumConnections: Int = 20) -> PostgresClient {
            var options = PostgresClient.Configuration.Options()
            options.maximumConnections = maximumConnections
            options.connectTimeout = .seconds(2)
            let configuration = PostgresClient.Configuration(
                host: url.host ?? "127.0.0.1",
                port: url.port ?? 5432,
                username: url.user ?? "authreq",
                password: nil,
                database: String(url.path.dropFirst()),
                tls: .disable
            )
            var withOptions = configuration
            withOptions.options = options
            let client = PostgresClient(configuration: withOptions)
            clientURLs.withLock { $0[ObjectIdentifier(client)] = url }
            return client
        }

        /// Runs `body` with a running client for `url`, and stops the client afterwards.
        package static func withClient<Value: Sendable>(
            _ url: URL,
            maximumConnections: Int = 20,
            _ body: @Sendable (PostgresClient) async throws -> Value
        ) async throws -> Value {
            let client = client(url, maximumConnections: maximumConnections)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                return try await body(client)
            }
        }

        /// A table name no other test uses.
        package static func uniqueTableName(_ prefix: String = "tokens") -> String {
            "\(prefix)_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
        }

        package static let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

        /// How many statements naming `table` the server has run (pg_stat_statements): every round
        /// trip of the store names its table.
        package static func statements(naming table: String, on client: PostgresClient) async throws -> Int {
            let pattern = "%\(table)%"
            let rows = try await client.query(
                "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements WHERE query LIKE \(pattern) AND query NOT LIKE '%pg_stat_statements%'",
                logger: logger)
            for try await count in rows.decode(Int.self) { return count }
            return 0
        }

        /// Runs `sql` (a test's own setup statement), reporting the server's whole answer when it
        /// fails: `PSQLError`'s description hides it.
        package static func execute(_ sql: String, on client: PostgresClient) async throws {
            do {
                try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger).readAll()
            } catch {
                throw ControlError(message: "\(sql): \(String(reflecting: error))")
            }
        }

        /// Whether a replica holds the refresh lease of `key` in `table` now.
        package static func leaseHeld(table: String, key: String, on client: PostgresClient) async throws -> Bool {
            do {
                let rows = try await client.query(
                    "SELECT expires_at > clock_timestamp() FROM \(unescaped: table)_leases WHERE store_key = \(key)",
                    logger: logger)
                for try await held in rows.decode(Bool.self) { return held }
                return false
            } catch {
                throw ControlError(message: "reading the lease: \(String(reflecting: error))")
            }
        }

        /// Whether a lease of `key` in `table` was taken and never released, expired or not: the
        /// store deletes its row when the holder releases it.
        package static func leaseLeftBehind(table: String, key: String, on client: PostgresClient) async throws -> Bool
        {
            let rows = try await client.query(
                "SELECT count(*)::bigint FROM \(unescaped: table)_leases WHERE store_key = \(key)", logger: logger)
            for try await count in rows.decode(Int.self) { return count > 0 }
            return false
        }

        /// Another machine takes the refresh lease of `key` in `table` for `seconds`, as a replica
        /// that then stops renewing it (dies) would.
        package static func holdLease(
            table: String, key: String, for seconds: Double, on client: PostgresClient
        ) async throws {
            try await client.query(
                """
                INSERT INTO \(unescaped: table)_leases (store_key, holder, expires_at)
                VALUES (\(key), 'another machine', clock_timestamp() + make_interval(secs => \(seconds)))
                ON CONFLICT (store_key) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
                """,
                logger: logger
            ).readAll()
        }

        /// Another machine gives up the lease it took with ``holdLease(table:key:for:on:)``.
        package static func releaseLease(table: String, key: String, on client: PostgresClient) async throws {
            try await client.query(
                "DELETE FROM \(unescaped: table)_leases WHERE store_key = \(key) AND holder = 'another machine'",
                logger: logger
            ).readAll()
        }

        /// Stops or starts the `faults` server (`Scripts/postgres.sh faults stop|start`).
        package static func controlFaultsServer(_ action: String) async throws {
            guard let script = environment["AUTHREQ_TEST_POSTGRES_CONTROL"] else {
                throw ControlError(message: "AUTHREQ_TEST_POSTGRES_CONTROL is not set")
            }
            let outcome = try await TestHelperProcess.run(
                URL(fileURLWithPath: "/bin/bash"), [script, "faults", action])
            guard outcome.status == 0, !outcome.wasKilled else {
                throw ControlError(message: "postgres.sh faults \(action) exited with \(outcome.status)")
            }
        }

        package struct ControlError: Error, CustomStringConvertible {
            package let message: String
            package var description: String { message }
        }
    }

    extension PostgresRowSequence {
        /// Reads the whole reply, so that a statement's late error is seen.
        fileprivate func readAll() async throws {
            for try await _ in self {}
        }
    }
#endif
