#if PostgreSQL
    import AuthenticatedRequests
    import Foundation
    import PostgresNIO
    @testable import PostgresTokenStore
    import Testing
    import TestSupport

    private typealias Database = PostgresTestDatabase

    /// The refresh lease is renewed on a connection of its own, so a holder whose write waits (a
    /// row lock, a slow disk) keeps it; and the holder's writes are fenced by the lease, so one
    /// whose lease another replica took over is refused, never committed over the newer holder's.
    @Suite(.enabled(if: Database.isConfigured, Comment(rawValue: Database.notRunReason)))
    struct PostgresLeaseFencingTests {
        let table = Database.uniqueTableName("fence")
        let key: TokenEncryptionKey

        init() throws {
            key = try TokenEncryptionKey.random(id: "k1")
        }

        /// A store with a short lease (3 s, renewed every second) and patient bounds otherwise.
        func store(_ client: PostgresClient) throws -> PostgresTokenStore {
            try PostgresTokenStore(
                connection: Database.connection(for: client), key: key,
                configuration: .init(
                    tableName: table, operationTimeout: 60, responseTimeout: 60, leaseDuration: 3))
        }

        /// `flow`'s entry holds an expired token `access-0` with refresh token `refresh-0`.
        func storeExpiredGrant(_ store: PostgresTokenStore, _ flow: FakeFlow) async throws {
            try await store.migrate()
            let token = OAuthToken(
                accessToken: "access-0", expiresAt: Date().addingTimeInterval(-10), refreshToken: "refresh-0",
                issuedAt: Date().addingTimeInterval(-3610))
            try await store.save(try JSONEncoder().encode(token), forKey: flow.storeKey)
        }

        /// When the lease of `key` expires, in seconds since 1970 on the database's clock; `nil`
        /// without a lease row.
        func leaseExpiry(_ key: String, on client: PostgresClient) async throws -> Double? {
            let rows = try await client.query(
                "SELECT extract(epoch FROM expires_at)::float8 FROM \(unescaped: table)_leases WHERE store_key = \(key)",
                logger: Database.logger)
            for try await expiry in rows.decode(Double.self) { return expiry }
            return nil
        }

        /// How many backends wait for a lock in a statement naming the table.
        func backendsWaitingForALock(on client: PostgresClient) async throws -> Int {
            let pattern = "%\(table)%"
            let rows = try await client.query(
                """
                SELECT count(*)::bigint FROM pg_stat_activity
                WHERE wait_event_type = 'Lock' AND query LIKE \(pattern) AND pid <> pg_backend_pid()
                """, logger: Database.logger)
            for try await count in rows.decode(Int.self) { return count }
            return 0
        }

        /// Holds `sql`'s row locks in a transaction of its own on one of `client`'s connections until
        /// `release` opens; returns once the locks are held.
        func holdLocks(_ sql: String, on client: PostgresClient, until release: Gate, then after: String? = nil)
            async throws -> Task<Void, any Error>
        {
            let held = Gate()
            let task = Task {
                try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: Database.logger)
                    try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Database.logger).drain()
                    await held.open()
                    await release.wait()
                    if let after {
                        try await connection.query(PostgresQuery(unsafeSQL: after), logger: Database.logger).drain()
                    }
                    try await connection.query("COMMIT", logger: Database.logger)
                }
            }
            await held.wait()
            return task
        }

        /// Polls `condition` every 50 ms for at most `seconds`.
        func within(_ seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(seconds)
            while ContinuousClock.now < deadline {
                if try await condition() { return true }
                try await Task.sleep(for: .milliseconds(50))
            }
            return false
        }

        /// The holder refreshes, and its write of the result waits on a row another session
        /// locked, for more than two lease lifetimes: the lease keeps being renewed meanwhile, a
        /// second replica waits rather than taking over, and once the row is free both have the
        /// holder's result: one refresh, from `refresh-0` only.
        @Test func aHolderWhoseWriteWaitsOnARowLockKeepsItsLeaseAndRefreshesOnce() async throws {
            let url = try #require(Database.shared)
            let flow = FakeFlow()
            try await Database.withClient(url) { client in
                let store = try store(client)
                try await storeExpiredGrant(store, flow)
                let release = Gate()
                let blocker = try await holdLocks(
                    "SELECT 1 FROM \(table) WHERE store_key = '\(flow.storeKey)' FOR UPDATE", on: client, until: release
                )
                let first = OAuthAuthenticator(flow: flow, store: store)
                let refreshing = Task { try await first.validCredential().accessToken }
                #expect(try await within(30) { try await backendsWaitingForALock(on: client) > 0 }, "the write waits")
                let before = try #require(try await leaseExpiry(flow.storeKey, on: client))
                try await Task.sleep(for: .seconds(7))  // over two lifetimes of the 3 s lease
                let after = try #require(try await leaseExpiry(flow.storeKey, on: client))
                #expect(after > before + 3, "renewed while the holder's write waited: \(before) → \(after)")
                #expect(try await Database.leaseHeld(table: table, key: flow.storeKey, on: client))
                let second = OAuthAuthenticator(flow: flow, store: try self.store(client))
                let waiting = Task { try await second.validCredential().accessToken }
                try await Task.sleep(for: .seconds(1))
                #expect(flow.refreshCalls == 1, "the holder refreshed; its write waits, the second replica too")
                await release.open()
                try await blocker.value
                #expect(try await refreshing.value == "access-1")
                #expect(try await waiting.value == "access-1", "adopted, not refreshed")
                #expect(flow.refreshCalls == 1)
                #expect(flow.state.withLock { $0.refreshedFrom } == ["access-0"], "no refresh token used twice")
            }
        }

        /// The holder's write of its result waits on the entry's row, and its renewal on the
        /// lease's row, until the lease has expired and another replica has taken it over: the
        /// write is refused (`.leaseLost`, reported as a store failure), not committed over the
        /// newer holder's; the caller keeps the token it got, in memory.
        @Test func aWriteWhoseLeaseWasTakenOverIsRefused() async throws {
            let url = try #require(Database.shared)
            let flow = FakeFlow()
            try await Database.withClient(url) { client in
                let store = try store(client)
                try await storeExpiredGrant(store, flow)
                let releaseEntry = Gate()
                let entryBlocker = try await holdLocks(
                    "SELECT 1 FROM \(table) WHERE store_key = '\(flow.storeKey)' FOR UPDATE", on: client,
                    until: releaseEntry)
                let authenticator = OAuthAuthenticator(flow: flow, store: store)
                let failures = Locked<[AuthenticationEvent]>([])
                let observing = Task {
                    for await event in await authenticator.events() where event.kind == .storeFailed {
                        failures.withLock { $0.append(event) }
                    }
                }
                defer { observing.cancel() }
                #expect(await eventually(100_000) { await authenticator.hasEventObservers })
                let refreshing = Task { try await authenticator.validCredential().accessToken }
                #expect(try await within(30) { try await backendsWaitingForALock(on: client) > 0 }, "the write waits")
                // Renewal blocked too; once the lease has run out, "another replica" takes it.
                let releaseLease = Gate()
                let leaseBlocker = try await holdLocks(
                    "SELECT 1 FROM \(table)_leases WHERE store_key = '\(flow.storeKey)' FOR UPDATE", on: client,
                    until: releaseLease,
                    then: """
                        UPDATE \(table)_leases SET holder = 'another replica',
                        expires_at = clock_timestamp() + interval '60 seconds' WHERE store_key = '\(flow.storeKey)'
                        """)
                #expect(
                    try await within(30) { try await !Database.leaseHeld(table: table, key: flow.storeKey, on: client) }
                )
                await releaseLease.open()
                try await leaseBlocker.value
                await releaseEntry.open()
                try await entryBlocker.value
                #expect(try await refreshing.value == "access-1", "the caller keeps what it got, in memory")
                #expect(flow.refreshCalls == 1)
                #expect(await eventually(100_000) { !failures.withLock { $0.isEmpty } })
                let reported = failures.withLock { $0 }.compactMap { $0.error as? TokenStoreError }
                #expect(reported.map(\.code) == [.leaseLost], "\(failures.withLock { $0 })")
                let stored = try #require(try await store.load(forKey: flow.storeKey))
                #expect(try JSONDecoder().decode(OAuthToken.self, from: stored).accessToken == "access-0")
                let rows = try await client.query(
                    "SELECT holder FROM \(unescaped: table)_leases WHERE store_key = \(flow.storeKey)",
                    logger: Database.logger)
                var holder: String?
                for try await name in rows.decode(String.self) { holder = name }
                #expect(holder == "another replica", "the newer holder's lease stands")
                // Its removal refused too, the record that a refresh was in flight stays: the next
                // holder reports an unknown outcome rather than presenting the spent `refresh-0`.
                #expect(try await store.load(forKey: flow.storeKey + "#refresh-in-flight") != nil)
            }
        }
    }
#endif
