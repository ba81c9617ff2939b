#if PostgreSQL
    import AuthenticatedRequests
    import Foundation
    import InMemoryTracing
    import Metrics
    import MetricsTestKit
    import PostgresNIO
    import PostgresTokenStore
    import Testing
    import TestSupport
    import Tracing

    private typealias Database = PostgresTestDatabase

    @Suite(.enabled(if: Database.isConfigured, Comment(rawValue: Database.notRunReason)))
    struct PostgresObservabilityTests {
        let table = Database.uniqueTableName("observed")
        let key: TokenEncryptionKey

        init() throws {
            key = try TokenEncryptionKey.random(id: "k1")
        }

        /// Every metric of `table`: its label and dimensions.
        func metricsOfTheTable(_ metrics: TestMetrics) -> [(label: String, dimensions: [(String, String)])] {
            let counters = metrics.counters.map { ($0.label, $0.dimensions) }
            let timers = metrics.timers.map { ($0.label, $0.dimensions) }
            return (counters + timers).filter { $0.1.contains { $0 == "table" && $1 == table } }
        }

        /// A refresh with a second replica waiting for it, a retried connection, and a missing
        /// table, each as metrics and spans: the names and values an operator reads, and no token,
        /// key, password or entry key in any label or attribute.
        @Test func operationsRetriesLeaseWaitsAndErrorsAreMeasuredWithoutSecrets() async throws {
            let metrics = InMemoryObservability.metrics
            let tracer = InMemoryObservability.tracer
            let url = try #require(Database.shared)
            let flow = FakeFlow(storeKey: "client-\(UUID().uuidString)@https://auth.example.com/token")
            let gate = Gate()
            flow.state.withLock { $0.gate = gate }
            try await Database.withClient(url) { client in
                let store = try PostgresTokenStore(
                    connection: Database.connection(for: client), key: key,
                    configuration: .init(tableName: table, operationTimeout: Database.operationTimeout))
                try await store.migrate()
                let expired = OAuthToken(
                    accessToken: "access-0", expiresAt: Date().addingTimeInterval(-10), refreshToken: "refresh-0",
                    issuedAt: Date().addingTimeInterval(-3610))
                try await store.save(try JSONEncoder().encode(expired), forKey: flow.storeKey)
                let first = OAuthAuthenticator(flow: flow, store: store)
                let second = OAuthAuthenticator(flow: flow, store: store)
                let refreshing = Task { try await first.validCredential().accessToken }
                var held = false
                for _ in 0..<500 where !held {
                    try await Task.sleep(for: .milliseconds(20))
                    held = try await Database.leaseHeld(table: table, key: flow.storeKey, on: client)
                }
                #expect(held)
                let waiting = Task { try await second.validCredential().accessToken }
                // The second replica polls the lease before the first may finish.
                var polled = false
                for _ in 0..<1500 where !polled {
                    try await Task.sleep(for: .milliseconds(20))
                    polled = !metrics.timers(
                        label: "authreq_store_operation_duration_seconds",
                        dimensions: [("operation", "poll_lease"), ("table", table), ("outcome", "ok")]
                    ).isEmpty
                }
                #expect(polled, "the second replica waits for the lease")
                await gate.open()
                #expect(try await refreshing.value == "access-1")
                #expect(try await waiting.value == "access-1")
            }

            // Operations, timed by operation and outcome.
            let loads = try metrics.expectTimer(
                "authreq_store_operation_duration_seconds",
                [("operation", "load"), ("table", table), ("outcome", "ok")])
            #expect(!loads.values.isEmpty && loads.values.allSatisfy { $0 > 0 })
            let takes = try metrics.expectTimer(
                "authreq_store_operation_duration_seconds",
                [("operation", "take_lease"), ("table", table), ("outcome", "ok")])
            #expect(takes.values.count >= 2, "both replicas tried the lease")
            // The second replica's wait, ended by the release.
            let waits = try metrics.expectTimer(
                "authreq_store_lease_wait_duration_seconds", [("table", table), ("outcome", "released")])
            #expect(waits.values.count == 1 && waits.values[0] > 0)

            // A missing table: an error by code, at once.
            let missing = try PostgresTokenStore(
                connection: Database.connection(url), key: key,
                configuration: .init(tableName: table + "_missing"))
            await #expect(throws: TokenStoreError.self) { try await missing.load(forKey: flow.storeKey) }
            let errors = try metrics.expectCounter(
                "authreq_store_errors_total",
                [("operation", "load"), ("table", table + "_missing"), ("code", "store_misconfigured")])
            #expect(errors.totalValue == 1)

            // A database that refuses connections: retried by cause until responseTimeout.
            let refusing: PostgresConnection.Configuration
            refusing = PostgresConnection.Configuration(
                host: "127.0.0.1", port: try await freeLoopbackPort(), username: "authreq", password: nil,
                database: "authreq_test", tls: .disable)
            let away = try PostgresTokenStore(
                connection: refusing, key: key,
                configuration: .init(tableName: table, operationTimeout: 2, responseTimeout: 1))
            let awayError = await #expect(throws: TokenStoreError.self) { try await away.load(forKey: flow.storeKey) }
            #expect(awayError?.code == .unavailable)
            let retries = try metrics.expectCounter(
                "authreq_store_retries_total", [("operation", "load"), ("table", table), ("cause", "connection")])
            #expect(retries.totalValue >= 1, "tried again within the second it had")

            // Spans: one per operation, named after it, with the table and no more.
            let spans = tracer.finishedSpans.filter {
                $0.attributes["authreq.store.table"]?.toSpanAttribute() == .string(table)
            }
            let names = Set(spans.map(\.operationName))
            #expect(
                names.isSuperset(of: [
                    "authreq.store.load", "authreq.store.save", "authreq.store.take_lease",
                    "authreq.store.poll_lease", "authreq.store.release_lease", "authreq.store.migrate",
                ]),
                "\(names)")
            let failed = spans.filter { $0.attributes["authreq.store.error"] != nil }
            #expect(failed.contains { $0.operationName == "authreq.store.load" && $0.status?.code == .error })

            // Nothing secret anywhere: tokens, the sealing key, the entry's key (it names an account).
            let secrets = ["access-0", "access-1", "refresh-0", "refresh-1", key.base64, flow.storeKey]
            var shown: [String] = []
            for span in spans {
                span.attributes.forEach { name, value in shown.append("\(name)=\(value)") }
                shown.append(span.operationName)
                shown += span.errors.map { "\($0.error)" }
            }
            for metric in metricsOfTheTable(metrics) {
                shown.append(metric.label)
                shown += metric.dimensions.map { "\($0)=\($1)" }
            }
            #expect(!shown.isEmpty)
            for secret in secrets {
                #expect(!shown.contains { $0.contains(secret) }, "\(secret) shown")
            }
        }
    }
#endif
