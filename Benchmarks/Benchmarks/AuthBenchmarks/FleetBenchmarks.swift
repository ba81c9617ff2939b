// Issue 15: a grant shared by replicas on many machines through a PostgresTokenStore. Steady
// state costs the database nothing; an expiry costs one refresh plus a few round trips.
import AuthenticatedRequests
import Benchmark
import Foundation
import Logging
import PostgresNIO
import PostgresTokenStore
import RequestFixtures

/// The authorization server: a refresh takes 50 ms (as in the coalesced-refresh benchmark) and is
/// counted.
final class SlowFlow: OAuthFlow {
    let storeKey: String
    let refreshes = Locked(0)
    init(storeKey: String) { self.storeKey = storeKey }
    func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken { Fixtures.validToken() }
    func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        refreshes.withLock { $0 += 1 }
        try await Task.sleep(nanoseconds: 50_000_000)
        return OAuthToken(
            accessToken: "refreshed-\(UUID().uuidString)", expiresAt: Date().addingTimeInterval(3600),
            refreshToken: "rt-\(UUID().uuidString)", issuedAt: Date())
    }
}

/// K running connection pools ("machines") on the benchmark database, made once.
enum Fleet {
    static let replicas = 8
    static let requestsPerReplica = 100
    static let table = "bench_tokens_\(getpid())"
    static let logger = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })

    static let clients: [PostgresClient] = {
        guard let text = ProcessInfo.processInfo.environment["AUTHREQ_TEST_POSTGRES"], let url = URL(string: text)
        else { fatalError("Benchmarks/run starts PostgreSQL and sets AUTHREQ_TEST_POSTGRES") }
        return (0...replicas).map { _ in
            let client = PostgresClient(
                configuration: .init(
                    host: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: url.user ?? "authreq",
                    password: nil, database: String(url.path.dropFirst()), tls: .disable))
            Task.detached { await client.run() }
            return client
        }
    }()

    static let key: TokenEncryptionKey = {
        do { return try .random(id: "bench") } catch { fatalError("\(error)") }
    }()

    /// One store per machine; index `replicas` is the benchmark's own connection.
    static func store(_ index: Int) throws -> PostgresTokenStore {
        guard let text = ProcessInfo.processInfo.environment["AUTHREQ_TEST_POSTGRES"], let url = URL(string: text)
        else { fatalError("Benchmarks/run starts PostgreSQL and sets AUTHREQ_TEST_POSTGRES") }
        return try PostgresTokenStore(
            connection: PostgresConnection.Configuration(
                host: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: url.user ?? "authreq",
                password: nil, database: String(url.path.dropFirst()), tls: .disable),
            key: key, configuration: .init(tableName: table))
    }

    static func migrate() async throws { try await store(replicas).migrate() }

    /// A database round trip, as the store sees one.
    static func roundTrip() async throws -> Duration {
        let begin = ContinuousClock.now
        for try await _ in try await clients[replicas].query("SELECT 1", logger: logger) {}
        return ContinuousClock.now - begin
    }

    static func statements() async throws -> Int {
        let pattern = "%\(table)%"
        let rows = try await clients[replicas].query(
            "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements WHERE query LIKE \(pattern) AND query NOT LIKE '%pg_stat_statements%'",
            logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}

func fleetBenchmarks() {
    let micro: (String) -> BenchmarkMetric = {
        BenchmarkMetric.custom($0, polarity: .prefersSmaller, useScalingFactor: false)
    }
    let single = micro("expiry to all requests done µs: one process")
    let singleSameWork = micro("expiry to all requests done µs: one process, 800 requests")
    let fleet = micro("expiry to all requests done µs: 8 replicas on PostgreSQL")
    let roundTrip = micro("database round trip µs")
    let refreshes = micro("refreshes per expiry")
    let iteration = Locked(0)
    Benchmark(
        "Fleet: expiry to 8 x 100 requests done, against one process's refresh, interleaved",
        configuration: .init(
            metrics: [.wallClock, .throughput, single, singleSameWork, fleet, roundTrip, refreshes],
            maxDuration: .seconds(20),
            maxIterations: 40)
    ) { benchmark in
        try await Fleet.migrate()
        let round = iteration.next()
        let key = "fleet-\(round)@https://auth.example.com/token"
        let order = [[0, 1, 2], [2, 0, 1], [1, 2, 0]][round % 3]
        for variant in order {
            let flow = SlowFlow(storeKey: key)
            if variant != 1 {
                // One process, one refresh, no store: M requests (what one replica sees), or all
                // K x M (the same work as the fleet, on the same two cores).
                let count = variant == 0 ? Fleet.requestsPerReplica : Fleet.replicas * Fleet.requestsPerReplica
                let authenticator = OAuthAuthenticator(flow: flow, token: Fixtures.expiredToken())
                _ = try await authenticator.currentCredential()
                let begin = ContinuousClock.now
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<count {
                        group.addTask { blackHole(try await authenticator.validCredential()) }
                    }
                    try await group.waitForAll()
                }
                benchmark.measurement(
                    variant == 0 ? single : singleSameWork, Int((ContinuousClock.now - begin) / .nanoseconds(1)) / 1_000
                )
            } else {
                try await Fleet.store(Fleet.replicas).save(
                    try JSONEncoder().encode(Fixtures.expiredToken()), forKey: key)
                let authenticators = try (0..<Fleet.replicas).map {
                    OAuthAuthenticator(flow: flow, store: try Fleet.store($0))
                }
                // Each replica holds the token in memory when it expires.
                for authenticator in authenticators { _ = try await authenticator.currentCredential() }
                let begin = ContinuousClock.now
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for authenticator in authenticators {
                        for _ in 0..<Fleet.requestsPerReplica {
                            group.addTask { blackHole(try await authenticator.validCredential()) }
                        }
                    }
                    try await group.waitForAll()
                }
                benchmark.measurement(fleet, Int((ContinuousClock.now - begin) / .nanoseconds(1)) / 1_000)
                benchmark.measurement(refreshes, flow.refreshes.withLock { $0 })
            }
        }
        benchmark.measurement(roundTrip, Int(try await Fleet.roundTrip() / .nanoseconds(1)) / 1_000)
    }

    let storeCalls = BenchmarkMetric.custom("store calls per 10000 requests", polarity: .prefersSmaller)
    let databaseStatements = BenchmarkMetric.custom("database statements per 10000 requests", polarity: .prefersSmaller)
    Benchmark(
        "Fleet: 10000 requests with a valid token on a PostgresTokenStore",
        configuration: .init(
            metrics: [.wallClock, .throughput, storeCalls, databaseStatements], maxDuration: .seconds(4),
            maxIterations: 10)
    ) { benchmark in
        try await Fleet.migrate()
        let store = CountingStore(try Fleet.store(0))
        let authenticator = OAuthAuthenticator(flow: InstantFlow(), token: Fixtures.validToken(), store: store)
        let resource = AuthenticatedMe(
            authenticator: authenticator, transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
        _ = try await resource.request()  // the initial save
        let calls = store.calls.withLock { $0 }
        let statements = try await Fleet.statements()
        for _ in 0..<10_000 { blackHole(try await resource.request()) }
        benchmark.measurement(storeCalls, store.calls.withLock { $0 } - calls)
        benchmark.measurement(databaseStatements, try await Fleet.statements() - statements)
    }
}
