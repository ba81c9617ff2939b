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
    /// without them gets `.ioFailed` with the server's message, not `.unavailable`.
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

        func store(_ client: PostgresClient) throws -> PostgresTokenStore {
            try PostgresTokenStore(
                client: client, key: TokenEncryptionKey.random(id: "k1"),
                configuration: .init(tableName: table, operationTimeout: Database.operationTimeout))
        }

        @Test func migrateWithoutCreateIsIOFailedWithTheServersMessage() async throws {
            let admin = try #require(Database.shared)
            try await Database.withClient(admin) { client in
                // PostgreSQL 15: a new role has no CREATE on the public schema.
                try await client.query("CREATE ROLE \(unescaped: role) LOGIN", logger: Database.logger).drain()
            }
            let error = try await Database.withClient(try url(admin, user: role)) { client in
                await #expect(throws: TokenStoreError.self) { try await store(client).migrate() }
            }
            #expect(error?.code == .ioFailed, "the database answered: \(String(describing: error))")
            #expect("\(String(describing: error))".contains("permission denied"), "the server's message")
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
    }
#endif
