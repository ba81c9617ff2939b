#if PostgreSQL
    import AuthenticatedRequests
    import Foundation
    import PostgresNIO
    @testable import PostgresTokenStore
    import Testing
    import TestSupport

    private typealias Database = PostgresTestDatabase

    /// The privileges the README names, exactly: `migrate()` needs `CREATE` on the schema; at run
    /// time the store needs `SELECT, INSERT, UPDATE, DELETE` on its table and nothing else. A role
    /// without them gets `.misconfigured` at once, with the server's message and what to grant,
    /// not `.unavailable`, and never refreshes without the lease.
    @Suite(.enabled(if: Database.isConfigured, Comment(rawValue: Database.notRunReason)))
    struct PostgresPrivilegesTests {
        let table = Database.uniqueTableName()
        let role = "role_\(UUID().uuidString.prefix(8).lowercased())"

        /// `url` with `user` instead of its user.
        func url(_ url: URL, user: String) throws -> URL {
            var components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
            components.user = user
            return try #require(components.url)
        }

        func store(
            _ client: PostgresClient, whenUnavailable: PostgresTokenStore.UnavailablePolicy = .failRefresh
        ) throws -> PostgresTokenStore {
            try PostgresTokenStore(
                connection: Database.connection(for: client), key: TokenEncryptionKey.random(id: "k1"),
                configuration: .init(
                    tableName: table, operationTimeout: Database.operationTimeout, whenUnavailable: whenUnavailable))
        }

        @Test func migrateWithoutCreateIsMisconfiguredWithTheServersMessage() async throws {
            let admin = try #require(Database.shared)
            try await Database.withClient(admin) { client in
                // PostgreSQL 15: a new role has no CREATE on the public schema.
                try await client.query("CREATE ROLE \(unescaped: role) LOGIN", logger: Database.logger).drain()
            }
            let error = try await Database.withClient(try url(admin, user: role)) { client in
                await #expect(throws: TokenStoreError.self) { try await store(client).migrate() }
            }
            #expect(error?.code == .misconfigured, "the database answered: \(String(describing: error))")
            #expect("\(String(describing: error))".contains("permission denied"), "the server's message")
            #expect("\(String(describing: error))".contains("grant"), "what to fix")
            #expect(!"\(String(describing: error))".contains("PostgresTransactionError"), "not the envelope")
        }

        @Test func theRuntimePrivilegesAloneServeEveryOperation() async throws {
            let admin = try #require(Database.shared)
            try await Database.withClient(admin) { client in
                try await store(client).migrate()  // as the schema's owner
                try await client.query("CREATE ROLE \(unescaped: role) LOGIN", logger: Database.logger).drain()
                try await client.query(
                    "GRANT SELECT, INSERT, UPDATE, DELETE ON \(unescaped: table), \(unescaped: table)_leases TO \(unescaped: role)",
                    logger: Database.logger
                ).drain()
            }
            try await Database.withClient(try url(admin, user: role)) { client in
                let store = try store(client)
                try await store.save(Data("entry".utf8), forKey: "k")
                #expect(try await store.load(forKey: "k") == Data("entry".utf8))
                let value = try await store.withRefreshLock(forKey: "k", timeout: 10) {
                    try await store.load(forKey: "k")
                }
                #expect(value == Data("entry".utf8))
                try await store.removeValue(forKey: "k")
                #expect(try await store.load(forKey: "k") == nil)
            }
        }

        /// A role granted the entries' table but not its `_leases` table: the lease is refused at
        /// once as a configuration error, and no refresh runs, under either policy.
        @Test(arguments: [PostgresTokenStore.UnavailablePolicy.failRefresh, .refreshUncoordinated])
        func aMissingLeaseGrantIsMisconfiguredAndNothingRefreshes(policy: PostgresTokenStore.UnavailablePolicy)
            async throws
        {
            let admin = try #require(Database.shared)
            try await Database.withClient(admin) { client in
                try await store(client).migrate()
                try await client.query("CREATE ROLE \(unescaped: role) LOGIN", logger: Database.logger).drain()
                try await client.query(
                    "GRANT SELECT, INSERT, UPDATE, DELETE ON \(unescaped: table) TO \(unescaped: role)",
                    logger: Database.logger
                ).drain()
            }
            let refreshed = Locked(0)
            let started = ContinuousClock.now
            let error = try await Database.withClient(try url(admin, user: role)) { client in
                await #expect(throws: TokenStoreError.self) {
                    try await store(client, whenUnavailable: policy).withRefreshLock(forKey: "k", timeout: 10) {
                        refreshed.withLock { $0 += 1 }
                    }
                }
            }
            #expect(error?.code == .misconfigured, "\(String(describing: error))")
            #expect("\(String(describing: error))".contains("_leases"), "names the table to grant")
            #expect(refreshed.withLock { $0 } == 0, "no refresh without the lease")
            // Reported at once, not at the lease's or the statement's timeout.
            #expect(ContinuousClock.now - started < .seconds(Database.operationTimeout))
        }

        /// A store whose login the database refuses: a wrong password (a role that signs in with
        /// SCRAM) or a role that does not exist. The refresh's first statement reports it at
        /// once as `.misconfigured` with what to check, not after the 30 s bounds as
        /// `.unavailable`, and nothing refreshes, under either policy.
        @Test(arguments: [PostgresTokenStore.UnavailablePolicy.failRefresh, .refreshUncoordinated])
        func aRefusedLoginIsMisconfiguredAtOnceAndNothingRefreshes(policy: PostgresTokenStore.UnavailablePolicy)
            async throws
        {
            let admin = try #require(Database.shared)
            try await Database.withClient(admin) { client in
                try await store(client).migrate()
                try await client.query(
                    "CREATE ROLE \(unescaped: role) LOGIN PASSWORD 'the-right-one' IN ROLE authreq_password_login",
                    logger: Database.logger
                ).drain()
                try await client.query(
                    "GRANT SELECT, INSERT, UPDATE, DELETE ON \(unescaped: table), \(unescaped: table)_leases TO \(unescaped: role)",
                    logger: Database.logger
                ).drain()
            }
            var rightPassword = Database.connection(admin)
            rightPassword.username = role
            rightPassword.password = "the-right-one"
            var wrongPassword = rightPassword
            wrongPassword.password = "a-wrong-one"
            var missingRole = Database.connection(admin)
            missingRole.username = "no_such_role_\(UUID().uuidString.prefix(8).lowercased())"
            // The right password works: the refusals below are the login's, nothing else.
            let working = try PostgresTokenStore(
                connection: rightPassword, key: TokenEncryptionKey.random(id: "k1"),
                configuration: .init(tableName: table, operationTimeout: Database.operationTimeout))
            try await working.save(Data("entry".utf8), forKey: "k")
            for connection in [wrongPassword, missingRole] {
                let store = try PostgresTokenStore(
                    connection: connection, key: TokenEncryptionKey.random(id: "k1"),
                    configuration: .init(
                        tableName: table, operationTimeout: 30, responseTimeout: 30, whenUnavailable: policy))
                let refreshed = Locked(0)
                let started = ContinuousClock.now
                let error = await #expect(throws: TokenStoreError.self) {
                    try await store.withRefreshLock(forKey: "k", timeout: 30) { refreshed.withLock { $0 += 1 } }
                }
                let waited = ContinuousClock.now - started
                #expect(error?.code == .misconfigured, "\(String(describing: error))")
                #expect("\(String(describing: error))".contains("user and password"), "what to check")
                #expect(!"\(String(describing: error))".contains("a-wrong-one"), "no password in the error")
                #expect(refreshed.withLock { $0 } == 0, "no refresh without the lease")
                // At once: the bounds are 30 s, and the first answer decides.
                #expect(waited < .seconds(10), "reported after \(waited)")
                let loadError = await #expect(throws: TokenStoreError.self) { try await store.load(forKey: "k") }
                #expect(loadError?.code == .misconfigured)
            }
        }
    }
#endif
