#if PostgreSQL
    import AuthenticatedRequests
    import Crypto
    import Foundation
    import PostgresNIO
    @testable import PostgresTokenStore
    import Testing
    import TestSupport

    private typealias Database = PostgresTestDatabase

    /// Issue 15 against a real PostgreSQL server (`Scripts/postgres.sh`); each test has a table of
    /// its own. Replicas are separate authenticators with separate connection pools, so the
    /// database sees them as separate machines; `PostgresFleetEndToEndTests` uses real processes.
    @Suite(.enabled(if: Database.isConfigured, Comment(rawValue: Database.notRunReason)))
    struct PostgresTokenStoreTests {
        let table = Database.uniqueTableName()
        let key: TokenEncryptionKey

        init() throws {
            key = try TokenEncryptionKey.random(id: "k1")
        }

        func store(
            _ client: PostgresClient, key: TokenEncryptionKey? = nil, previousKeys: [TokenEncryptionKey] = [],
            migrate: Bool = true
        ) async throws -> PostgresTokenStore {
            let store = try PostgresTokenStore(
                connection: Database.connection(for: client), key: key ?? self.key, previousKeys: previousKeys,
                configuration: .init(tableName: table, operationTimeout: Database.operationTimeout))
            if migrate { try await store.migrate() }
            return store
        }

        /// A store whose entry for `flow` holds an expired grant.
        func storeWithExpiredGrant(_ client: PostgresClient, _ flow: FakeFlow) async throws -> PostgresTokenStore {
            let store = try await store(client)
            try await store.save(try JSONEncoder().encode(Self.expiredToken()), forKey: flow.storeKey)
            return store
        }

        static func expiredToken(_ name: String = "access-0") -> OAuthToken {
            OAuthToken(
                accessToken: name, expiresAt: Date().addingTimeInterval(-10), refreshToken: "refresh-0",
                issuedAt: Date().addingTimeInterval(-3610))
        }

        @Test func migrationIsVersionedIdempotentAndSafeForReplicasStartingTogether() async throws {
            let url = try #require(Database.shared)
            try await Database.withClient(url) { client in
                let store = try await store(client, migrate: false)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 { group.addTask { try await store.migrate() } }
                    try await group.waitForAll()
                }
                try await store.migrate()
                let rows = try await client.query(
                    "SELECT version FROM \(unescaped: table)_schema ORDER BY version", logger: Database.logger)
                var versions: [Int] = []
                for try await version in rows.decode(Int.self) { versions.append(version) }
                #expect(
                    versions == Array(1...PostgresTokenStore.schemaVersion), "one row per version, however often it ran"
                )
                try await store.save(Data("x".utf8), forKey: "k")
                #expect(try await store.load(forKey: "k") == Data("x".utf8))
            }
        }

        @Test func theDocumentedSQLIsWhatMigrateWouldDo() async throws {
            let url = try #require(Database.shared)
            try await Database.withClient(url) { client in
                // As psql would run it: one statement at a time.
                for statement in try PostgresTokenStore.schemaSQL(tableName: table).split(separator: ";")
                where !statement.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                    try await client.query(PostgresQuery(unsafeSQL: String(statement)), logger: Database.logger).drain()
                }
                let store = try await store(client)  // migrate() finds the schema current
                try await store.save(Data("y".utf8), forKey: "k")
                #expect(try await store.load(forKey: "k") == Data("y".utf8))
                #expect(throws: TokenStoreError.self) { try PostgresTokenStore.schemaSQL(tableName: "x; DROP TABLE y") }
            }
        }

        @Test(arguments: [
            "", "Tokens", "1tokens", "tokens; drop table users", "a-b", String(repeating: "a", count: 56),
        ])
        func tableNamesThatAreNotPlainIdentifiersAreRefused(_ name: String) async throws {
            let client = Database.client(try #require(Database.shared))
            #expect(throws: TokenStoreError.self) {
                _ = try PostgresTokenStore(
                    connection: Database.connection(for: client), key: key, configuration: .init(tableName: name))
            }
        }

        @Test func entriesRoundTripAndTheTableHoldsNoPlaintext() async throws {
            let url = try #require(Database.shared)
            try await Database.withClient(url) { client in
                let store = try await store(client)
                let secret = Data(#"{"access_token":"at-SECRET-123","refresh_token":"rt-SECRET-456"}"#.utf8)
                try await store.save(secret, forKey: "app@https://auth.example.com/token")
                #expect(try await store.load(forKey: "app@https://auth.example.com/token") == secret)
                #expect(try await store.load(forKey: "other") == nil)
                let rows = try await client.query(
                    "SELECT store_key, key_id, sealed, sealed::text FROM \(unescaped: table)", logger: Database.logger)
                for try await (storeKey, keyID, sealed, text) in rows.decode((String, String, Data, String).self) {
                    #expect(storeKey == "app@https://auth.example.com/token")
                    #expect(keyID == "k1")
                    #expect(sealed.count == secret.count + 28, "nonce, ciphertext and tag")
                    #expect(sealed.range(of: Data("SECRET".utf8)) == nil)
                    #expect(!text.contains("SECRET"))
                }
                try await store.removeValue(forKey: "app@https://auth.example.com/token")
                #expect(try await store.load(forKey: "app@https://auth.example.com/token") == nil)
                try await store.removeValue(forKey: "app@https://auth.example.com/token")  // no error when absent
            }
        }

        @Test func aWrongKeyIsAClearErrorNeverGarbage() async throws {
            let url = try #require(Database.shared)
            try await Database.withClient(url) { client in
                try await store(client).save(Data("secret".utf8), forKey: "k")
                // The same id, other bytes: a key mixed up between environments.
                let impostor = try await store(client, key: TokenEncryptionKey.random(id: "k1"), migrate: false)
                let wrongBytes = await #expect(throws: TokenStoreError.self) { try await impostor.load(forKey: "k") }
                #expect(wrongBytes?.code == .undecryptable)
                #expect("\(wrongBytes.map(String.init(describing:)) ?? "")".contains("does not open"))
                // Another id: a key that was removed before its entries were resealed.
                let other = try await store(client, key: TokenEncryptionKey.random(id: "k2"), migrate: false)
                let unknownID = await #expect(throws: TokenStoreError.self) { try await other.load(forKey: "k") }
                #expect(unknownID?.code == .undecryptable)
                #expect("\(unknownID.map(String.init(describing:)) ?? "")".contains("'k1', which is not configured"))
                // A sealed entry copied to another key's row does not open there.
                try await client.query(
                    "INSERT INTO \(unescaped: table) (store_key, key_id, sealed) SELECT 'moved', key_id, sealed FROM \(unescaped: table) WHERE store_key = 'k'",
                    logger: Database.logger
                ).drain()
                let moved = await #expect(throws: TokenStoreError.self) {
                    try await store(client, migrate: false).load(forKey: "moved")
                }
                #expect(moved?.code == .undecryptable)
            }
        }

        @Test func aKeyRotationKeepsEveryEntryReadable() async throws {
            let url = try #require(Database.shared)
            try await Database.withClient(url) { client in
                let old = try await store(client)
                for index in 0..<5 { try await old.save(Data("entry \(index)".utf8), forKey: "k\(index)") }
                let newKey = try TokenEncryptionKey.random(id: "k2")
                let rotated = try await store(client, key: newKey, previousKeys: [key], migrate: false)
                #expect(
                    try await rotated.load(forKey: "k3") == Data("entry 3".utf8),
                    "old entries open with the previous key")
                try await rotated.save(Data("new".utf8), forKey: "k0")  // new writes use the new key
                #expect(try await rotated.resealEntries() == 4)
                #expect(try await rotated.resealEntries() == 0)
                let newOnly = try await store(client, key: newKey, migrate: false)  // the old key retired
                for index in 1..<5 {
                    #expect(try await newOnly.load(forKey: "k\(index)") == Data("entry \(index)".utf8))
                }
                #expect(try await newOnly.load(forKey: "k0") == Data("new".utf8))
            }
        }

        @Test func keysRefuseWrongSizesAndNeverShowTheirBytes() throws {
            #expect(throws: TokenEncryptionKeyError.self) {
                try TokenEncryptionKey(id: "k", key: SymmetricKey(size: .bits128))
            }
            #expect(throws: TokenEncryptionKeyError.self) { try TokenEncryptionKey(id: "k", base64: "not base64!") }
            #expect(throws: TokenEncryptionKeyError.self) {
                try TokenEncryptionKey(id: "", key: SymmetricKey(size: .bits256))
            }
            let key = try TokenEncryptionKey.random(id: "k")
            var dumped = ""
            dump(key, to: &dumped)
            #expect(!dumped.contains(key.base64) && "\(key)" == "TokenEncryptionKey(k)")
            #expect(try TokenEncryptionKey(id: "k", base64: key.base64).base64 == key.base64)
            let client = Database.client(URL(string: "postgres://x@127.0.0.1:1/x")!)
            #expect(throws: TokenEncryptionKeyError.self) {
                _ = try PostgresTokenStore(connection: Database.connection(for: client), key: key, previousKeys: [key])
            }
        }

        /// 8 replicas × 25 concurrent requests on one expired grant: one refresh, one token.
        @Test func replicasRefreshAGrantOnceAndShareTheResult() async throws {
            let url = try #require(Database.shared)
            let flow = FakeFlow()  // the authorization server, shared by every replica
            try await Database.withClient(url) { client in
                let seed = try await store(client)
                try await seed.save(try JSONEncoder().encode(Self.expiredToken()), forKey: flow.storeKey)
            }
            let tokens = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await Database.withClient(url) { client in
                            let store = try await store(client, migrate: false)
                            let replica = OAuthAuthenticator(flow: flow, store: store)
                            return try await withThrowingTaskGroup(of: String.self) { requests in
                                for _ in 0..<25 { requests.addTask { try await replica.validCredential().accessToken } }
                                return try await requests.reduce(into: []) { $0.append($1) }
                            }
                        }
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(tokens.count == 200)
            #expect(Set(tokens) == ["access-1"], "every replica uses the one refreshed token")
            #expect(flow.refreshCalls == 1)
            #expect(flow.state.withLock { $0.refreshedFrom } == ["access-0"])
        }

        @Test func aValidTokenCostsNoDatabaseRoundTrip() async throws {
            let url = try #require(Database.shared)
            let flow = FakeFlow()
            try await Database.withClient(url) { client in
                let store = try await store(client)
                try await store.save(try JSONEncoder().encode(Self.expiredToken()), forKey: flow.storeKey)
                let authenticator = OAuthAuthenticator(flow: flow, store: store)
                _ = try await authenticator.validCredential()  // loads, locks, refreshes, writes
                let before = try await Database.statements(naming: table, on: client)
                for _ in 0..<1000 { _ = try await authenticator.validCredential() }
                #expect(try await Database.statements(naming: table, on: client) == before, "0 round trips per request")
                #expect(before > 0, "the counter sees the store's statements")
            }
        }

        @Test func aLeaseHeldTooLongFailsTheRefreshWithoutRefreshing() async throws {
            let url = try #require(Database.shared)
            let flow = FakeFlow()
            try await Database.withClient(url) { client in
                let store = try await storeWithExpiredGrant(client, flow)
                try await Database.holdLease(table: table, key: flow.storeKey, for: 60, on: client)
                let authenticator = OAuthAuthenticator(
                    flow: flow, store: store, configuration: .init(storeLockTimeout: 0.5))
                let error = await #expect(throws: AuthenticationError.self) {
                    try await authenticator.validCredential()
                }
                #expect(error?.code == .refreshFailed)
                #expect((error?.underlyingError as? TokenStoreError)?.code == .lockTimedOut)
                #expect(flow.refreshCalls == 0, "never refreshed without the lease")
                #expect(try await Database.leaseHeld(table: table, key: flow.storeKey, on: client))
            }
        }

        /// Another machine holds the lease while the replica needs a refresh; when it releases it,
        /// the replica uses what it stored, or refreshes itself when it stored nothing new. While
        /// it waits, the replica holds no connection: its pool has one, and the other machine's
        /// statements still get through on a pool of one.
        @Test(arguments: [true, false])
        func aWaiterAdoptsWhatTheLeaseHolderStoredOrRefreshesItself(holderStoresAToken: Bool) async throws {
            let url = try #require(Database.shared)
            let flow = FakeFlow()
            try await Database.withClient(url) { client in
                let store = try await storeWithExpiredGrant(client, flow)
                let authenticator = OAuthAuthenticator(flow: flow, store: store)
                _ = try await authenticator.currentCredential()
                try await Database.holdLease(table: table, key: flow.storeKey, for: 60, on: client)
                let before = try await Database.statements(naming: "\(table)_leases", on: client)
                let waiter = Task { try await authenticator.validCredential().accessToken }
                // The waiter polls the lease with short statements.
                var polls = 0
                for _ in 0..<200 where polls < 3 {
                    try await Task.sleep(nanoseconds: 20_000_000)
                    polls = try await Database.statements(naming: "\(table)_leases", on: client) - before
                }
                #expect(polls >= 3, "the waiter polls")
                #expect(flow.refreshCalls == 0)
                if holderStoresAToken {
                    let fresh = OAuthToken(
                        accessToken: "from-the-holder", expiresAt: Date().addingTimeInterval(3600),
                        refreshToken: "refresh-holder", issuedAt: Date())
                    try await store.save(try JSONEncoder().encode(fresh), forKey: flow.storeKey)
                }
                try await Database.releaseLease(table: table, key: flow.storeKey, on: client)
                let token = try await waiter.value
                #expect(token == (holderStoresAToken ? "from-the-holder" : "access-1"))
                #expect(flow.refreshCalls == (holderStoresAToken ? 0 : 1))
                #expect(try await Database.leaseHeld(table: table, key: flow.storeKey, on: client) == false)
            }
        }

        /// A waiting replica holds no connection: with a pool of one connection, its own store's
        /// other statements (another entry's save) get through while it waits.
        @Test func aWaitingReplicaHoldsNoConnection() async throws {
            let url = try #require(Database.shared)
            let flow = FakeFlow()
            try await Database.withClient(url) { setup in
                _ = try await storeWithExpiredGrant(setup, flow)
                try await Database.holdLease(table: table, key: flow.storeKey, for: 60, on: setup)
                try await Database.withClient(url, maximumConnections: 1) { single in
                    let store = try await store(single, migrate: false)
                    let authenticator = OAuthAuthenticator(flow: flow, store: store)
                    _ = try await authenticator.currentCredential()
                    let waiter = Task { try await authenticator.validCredential().accessToken }
                    try await Task.sleep(nanoseconds: 300_000_000)
                    for index in 0..<5 {
                        try await store.save(Data("other \(index)".utf8), forKey: "other-entry")
                    }
                    #expect(try await store.load(forKey: "other-entry") == Data("other 4".utf8))
                    try await Database.releaseLease(table: table, key: flow.storeKey, on: setup)
                    #expect(try await waiter.value == "access-1")
                }
            }
        }

        /// A healthy database with the lease held elsewhere for 20 s: the refresh waits (it is not
        /// reported unavailable after the 10 s response timeout), then takes the lease and refreshes.
        @Test func aLeaseHeldElsewhereForTwentySecondsIsWaitedForThenUsed() async throws {
            let url = try #require(Database.shared)
            let flow = FakeFlow()
            try await Database.withClient(url) { client in
                let store = try await storeWithExpiredGrant(client, flow)
                let authenticator = OAuthAuthenticator(flow: flow, store: store)  // lock timeout 60 s
                _ = try await authenticator.currentCredential()
                try await Database.holdLease(table: table, key: flow.storeKey, for: 60, on: client)
                let waiter = Task { try await authenticator.validCredential().accessToken }
                try await Task.sleep(for: .seconds(20))
                #expect(flow.refreshCalls == 0, "nobody refreshed while the lease was held")
                try await Database.releaseLease(table: table, key: flow.storeKey, on: client)
                #expect(try await waiter.value == "access-1", "waited for, then used")
                #expect(flow.refreshCalls == 1)
            }
        }

        /// A replica that took the lease and died never renews it: once it expires (by the
        /// database's clock), a waiting replica takes it over and refreshes.
        @Test func aLeaseWhoseHolderDiedIsTakenOverOnceItExpires() async throws {
            let url = try #require(Database.shared)
            let flow = FakeFlow()
            try await Database.withClient(url) { client in
                let store = try await storeWithExpiredGrant(client, flow)
                try await Database.holdLease(table: table, key: flow.storeKey, for: 2, on: client)
                let authenticator = OAuthAuthenticator(
                    flow: flow, store: store, configuration: .init(storeLockTimeout: 30))
                // Had the lease outlived its expiry, this would fail with lockTimedOut.
                #expect(try await authenticator.validCredential().accessToken == "access-1")
                #expect(flow.refreshCalls == 1)
                #expect(try await Database.leaseHeld(table: table, key: flow.storeKey, on: client) == false)
            }
        }

        /// The refreshing replica renews its lease while the authorization server takes longer
        /// than the lease lasts, so no other replica takes over meanwhile.
        @Test func aSlowRefreshKeepsItsLeaseByRenewingIt() async throws {
            let url = try #require(Database.shared)
            let flow = FakeFlow()
            let gate = Gate()  // the authorization server answers when the test says
            flow.state.withLock { $0.gate = gate }
            try await Database.withClient(url) { client in
                _ = try await storeWithExpiredGrant(client, flow)
                let store = try PostgresTokenStore(
                    connection: Database.connection(for: client), key: key,
                    configuration: .init(
                        tableName: table, operationTimeout: Database.operationTimeout, leaseDuration: 4))
                let first = OAuthAuthenticator(flow: flow, store: store)
                let second = OAuthAuthenticator(flow: flow, store: store)
                let refreshing = Task { try await first.validCredential().accessToken }
                var held = false
                for _ in 0..<200 where !held {
                    try await Task.sleep(nanoseconds: 10_000_000)
                    held = try await Database.leaseHeld(table: table, key: flow.storeKey, on: client)
                }
                #expect(held)
                // Past two of the lease's lifetimes; renewed every 1.3 s, it has 2.7 s of margin
                // for a renewal slowed by a busy machine.
                try await Task.sleep(for: .seconds(9))
                #expect(try await Database.leaseHeld(table: table, key: flow.storeKey, on: client), "renewed")
                let waiting = Task { try await second.validCredential().accessToken }
                try await Task.sleep(for: .seconds(1.5))
                #expect(flow.refreshCalls == 1, "the second replica waits: the lease is still held")
                await gate.open()
                #expect(try await refreshing.value == "access-1")
                #expect(try await waiting.value == "access-1", "adopted, not refreshed")
                #expect(flow.refreshCalls == 1)
            }
        }
    }
#endif
