#if PostgreSQL
    import AuthenticatedRequests
    import Foundation
    import OAuthFlows
    import PostgresNIO
    import PostgresTokenStore
    import TestSupport
    import Testing

    private typealias Server = TestAuthorizationServer
    private typealias Database = PostgresTestDatabase

    /// Issues 37 and 46: 192 replicas on one expired grant, at the store's default settings,
    /// against a PostgreSQL server with its default `max_connections` (100), directly and through
    /// PgBouncer in transaction pooling mode with a server pool of 20. The replicas are 24
    /// processes of 8 independent replicas each (a store with its own connections and an
    /// authenticator): 192 processes of the helper do not fit two cores within the suite's time.
    /// A process exits once its replicas are served; the store closes a connection 50 ms after
    /// its last statement anyway, so a replica kept up holds no more. One test at a time: they
    /// share the server.
    @Suite(
        .serialized,
        .enabled(if: Server.isConfigured, Server.notRunReason),
        .enabled(if: Database.isConfigured, Comment(rawValue: Database.notRunReason)))
    struct PostgresFleetAtScaleTests {
        static let processes = 24
        static let replicasPerProcess = 8
        static let requestsPerReplica = 5

        let table = Database.uniqueTableName("scale")
        let key: TokenEncryptionKey

        init() throws {
            key = try TokenEncryptionKey.random(id: "test")
        }

        /// Signs in into the fleet database, then makes the stored access token look expired.
        func signInAndExpire(_ client: TestAuthorizationServer.Client, database: URL) async throws -> String {
            let storeKey = StoredSessionFlow(tokenEndpoint: try Server.tokenEndpoint, client: client.publicClient)
                .storeKey
            try await Database.withClient(database) { postgres in
                let store = try PostgresTokenStore(
                    connection: Database.connection(for: postgres), key: key,
                    configuration: .init(tableName: table, operationTimeout: Database.operationTimeout))
                try await store.migrate()
                _ = try await Server.signIn(client, into: OAuthAuthenticator(store: store))
                var token = try JSONDecoder().decode(
                    OAuthToken.self, from: try #require(try await store.load(forKey: storeKey)))
                token.expiresAt = Date().addingTimeInterval(-1)
                token.issuedAt = Date().addingTimeInterval(-61)
                try await store.save(try JSONEncoder().encode(token), forKey: storeKey)
            }
            return storeKey
        }

        /// The most client connections the server had at once while `body` ran (the monitor's
        /// own excluded), sampled every 20 ms.
        func peakConnections<Value: Sendable>(
            on database: URL, during body: @Sendable () async throws -> Value
        ) async throws -> (Value, Int) {
            try await Database.withClient(database, maximumConnections: 1) { monitor in
                let peak = Locked(0)
                let sampling = Task {
                    while !Task.isCancelled {
                        let rows = try await monitor.query(
                            """
                            SELECT count(*)::bigint FROM pg_stat_activity
                            WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
                            """,
                            logger: Database.logger)
                        for try await count in rows.decode(Int.self) { peak.withLock { $0 = max($0, count) } }
                        try await Task.sleep(nanoseconds: 20_000_000)
                    }
                }
                let value = try await body()
                sampling.cancel()
                _ = await sampling.result
                return (value, peak.withLock { $0 })
            }
        }

        @Test(arguments: [false, true])
        func aFleetOf192ReplicasAtDefaultSettingsRefreshesOnceAndIsAllServed(throughPgBouncer: Bool) async throws {
            let direct = try #require(Database.fleet)
            let route = try #require(throughPgBouncer ? Database.pgbouncerFleet : Database.fleet)
            let client = try await Server.makeClient(public: true, reuseDetection: true, accessTokenLifetime: 60)
            _ = try await signInAndExpire(client, database: direct)
            let start = Date().timeIntervalSince1970 + 8
            var environment = [
                "AUTHREQ_HELPER_TABLE": table, "AUTHREQ_HELPER_TOKEN_KEY": key.base64,
                "AUTHREQ_HELPER_REPLICAS": "\(Self.replicasPerProcess)",
                // Everyone starts together, once every process is up.
                "AUTHREQ_HELPER_START_AT": "\(start)",
            ]
            // The store's defaults, as a user gets them; the helper counts retries by cause.
            environment["AUTHREQ_HELPER_METRICS"] = "1"
            let arguments = [
                "requests", route.absoluteString, try Server.tokenEndpoint.absoluteString, client.id,
                try Server.base.appendingPathComponent("api/me").absoluteString, "\(Self.requestsPerReplica)",
            ]
            let replicaEnvironment = environment
            let started = ContinuousClock.now
            let (outcomes, peak) = try await peakConnections(on: direct) {
                try await withThrowingTaskGroup(of: TestHelperProcess.Outcome.self) { group in
                    for _ in 0..<Self.processes {
                        group.addTask { try await TestHelperProcess.run(arguments, environment: replicaEnvironment) }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            let elapsed = ContinuousClock.now - started - .seconds(8)
            let lastServed = outcomes.compactMap { $0.json?["lastServedAt"] as? Double }.max().map { $0 - start } ?? -1
            let replicas = Self.processes * Self.replicasPerProcess
            let served = outcomes.map { $0.json?["replicasServed"] as? Int ?? 0 }.reduce(0, +)
            let successes = outcomes.map { $0.json?["successes"] as? Int ?? 0 }.reduce(0, +)
            let counts = try await Server.tokenRequests(client)
            var retries: [String: Int] = [:]
            for outcome in outcomes {
                for (cause, count) in outcome.json?["retries"] as? [String: Int] ?? [:] {
                    retries[cause, default: 0] += count
                }
            }
            print(
                "Fleet of \(replicas) replicas \(throughPgBouncer ? "through PgBouncer (pool 20)" : "direct") at "
                    + "max_connections 100: \(counts["refresh_token"] ?? 0) refresh, \(served) served, "
                    + "peak \(peak) server connections, the last replica served \(lastServed) s after the start "
                    + "(restore, refresh and 5 requests each), the last process ended \(elapsed) after it, "
                    + "store retries by cause \(retries.sorted { $0.key < $1.key })")
            #expect(served == replicas, "every replica served: \(outcomes.map(\.output))")
            #expect(successes == replicas * Self.requestsPerReplica)
            #expect(counts["refresh_token"] == 1, "exactly one token request: \(counts)")
            #expect(counts["invalid_grant"] == nil && counts["reuse_detected"] == nil, "\(counts)")
            // The role is the cluster's superuser, so all 100 slots are its; the monitor has one.
            #expect(peak <= (throughPgBouncer ? 20 : 99), "within the server's connection budget")
        }
    }
#endif
