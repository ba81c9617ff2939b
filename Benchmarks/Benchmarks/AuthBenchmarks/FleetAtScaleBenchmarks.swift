// Issue 37: K replicas on one expired grant in a PostgresTokenStore, against a PostgreSQL server
// with its default max_connections (100): directly, each replica's pool closing idle connections
// as the "Many machines" article says, and through PgBouncer in transaction pooling mode with a
// server pool of 20. Each replica is an authenticator with a connection pool and a store of its
// own (all in this one process: 200 processes do not fit the benchmark machine's two cores).
import AuthenticatedRequests
import Benchmark
import Foundation
import Logging
import PostgresNIO
import PostgresTokenStore
import RequestFixtures

enum FleetAtScale {
    static let sizes = [16, 64, 200]
    static let table = "bench_scale_\(getpid())"
    static let logger = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })

    static func url(_ variable: String) -> URL {
        guard let text = ProcessInfo.processInfo.environment[variable], let url = URL(string: text) else {
            fatalError("Benchmarks/run starts PostgreSQL and PgBouncer and sets \(variable)")
        }
        return url
    }

    static func client(_ url: URL, maximumConnections: Int) -> PostgresClient {
        var configuration = PostgresClient.Configuration(
            host: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: url.user ?? "authreq",
            password: nil, database: String(url.path.dropFirst()), tls: .disable)
        configuration.options.maximumConnections = maximumConnections
        let client = PostgresClient(configuration: configuration)
        Task.detached { await client.run() }
        return client
    }

    static let key: TokenEncryptionKey = {
        do { return try .random(id: "bench") } catch { fatalError("\(error)") }
    }()

    /// The benchmark's own connection, straight to the server (one, which the count leaves out).
    static let monitor = client(url("AUTHREQ_TEST_POSTGRES_FLEET"), maximumConnections: 1)
    /// 200 replicas' stores per route, made once, at the store's default settings.
    static let direct = (0..<200).map { _ in connection(url("AUTHREQ_TEST_POSTGRES_FLEET")) }
    static let pooled = (0..<200).map { _ in connection(url("AUTHREQ_TEST_PGBOUNCER_FLEET")) }

    static func connection(_ url: URL) -> PostgresConnection.Configuration {
        PostgresConnection.Configuration(
            host: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: url.user ?? "authreq",
            password: nil, database: String(url.path.dropFirst()), tls: .disable)
    }

    static func store(_ connection: PostgresConnection.Configuration) throws -> PostgresTokenStore {
        try PostgresTokenStore(connection: connection, key: key, configuration: .init(tableName: table))
    }

    static func statements() async throws -> Int {
        let pattern = "%\(table)%"
        let rows = try await monitor.query(
            "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements WHERE query LIKE \(pattern) AND query NOT LIKE '%pg_stat_statements%'",
            logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    static func connections() async throws -> Int {
        let rows = try await monitor.query(
            "SELECT count(*)::bigint FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
            logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}

func fleetAtScaleBenchmarks() {
    let metric: (String, BenchmarkMetric.Polarity) -> BenchmarkMetric = {
        BenchmarkMetric.custom($0, polarity: $1, useScalingFactor: false)
    }
    let iteration = Locked(0)
    for size in FleetAtScale.sizes {
        for throughPgBouncer in [false, true] {
            let route = throughPgBouncer ? "through PgBouncer (pool 20)" : "direct"
            let served = metric("expiry to the last replica served ms", .prefersSmaller)
            let statements = metric("database statements, all replicas", .prefersSmaller)
            let refreshes = metric("refreshes per expiry", .prefersSmaller)
            let peak = metric("peak server connections", .prefersSmaller)
            Benchmark(
                "Fleet at scale: \(size) replicas \(route), max_connections 100",
                configuration: .init(
                    metrics: [.wallClock, .throughput, served, statements, refreshes, peak], maxDuration: .seconds(30),
                    maxIterations: 5)
            ) { benchmark in
                try await FleetAtScale.store(FleetAtScale.connection(url("AUTHREQ_TEST_POSTGRES_FLEET"))).migrate()
                let key = "scale-\(iteration.next())@https://auth.example.com/token"
                let flow = SlowFlow(storeKey: key)
                try await FleetAtScale.store(FleetAtScale.connection(url("AUTHREQ_TEST_POSTGRES_FLEET"))).save(
                    try JSONEncoder().encode(Fixtures.expiredToken()), forKey: key)
                let clients = (throughPgBouncer ? FleetAtScale.pooled : FleetAtScale.direct).prefix(size)
                let replicas = try clients.map { OAuthAuthenticator(flow: flow, store: try FleetAtScale.store($0)) }
                // Each replica holds the expired token in memory, as after a restore.
                for replica in replicas { _ = try await replica.currentCredential() }
                try await Task.sleep(for: .milliseconds(200))  // the direct pools' idle connections close
                let before = try await FleetAtScale.statements()
                let highest = Locked(0)
                let sampling = Task {
                    while !Task.isCancelled {
                        let count = try await FleetAtScale.connections()
                        highest.withLock { $0 = max($0, count) }
                        try await Task.sleep(for: .milliseconds(10))
                    }
                }
                let begin = ContinuousClock.now
                do {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for replica in replicas {
                            group.addTask { blackHole(try await replica.validCredential()) }
                        }
                        try await group.waitForAll()
                    }
                } catch {
                    // The harness drops a failed benchmark's results without its error: say it.
                    FileHandle.standardError.write(Data("Fleet at scale, \(size) \(route): \(error)\n".utf8))
                    throw error
                }
                let elapsed = ContinuousClock.now - begin
                sampling.cancel()
                _ = await sampling.result
                benchmark.measurement(served, Int(elapsed / .milliseconds(1)))
                benchmark.measurement(statements, try await FleetAtScale.statements() - before)
                benchmark.measurement(refreshes, flow.refreshes.withLock { $0 })
                benchmark.measurement(peak, highest.withLock { $0 })
            }
        }
    }
}
