// Issue 12: what the coordinated refresh costs per refresh (lock, re-read, in-flight record,
// fenced write, in a FileTokenStore), and proof that a request with a valid token touches no store.
import AuthenticatedRequests
import Benchmark
import Foundation
import RequestFixtures

/// A flow that refreshes at once, so the benchmark measures the store's part.
struct InstantFlow: OAuthFlow {
    let storeKey = "bench@https://auth.example.com/token"
    func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken { Fixtures.validToken() }
    func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        OAuthToken(
            accessToken: "refreshed-\(UUID().uuidString)", expiresAt: Date().addingTimeInterval(3600),
            refreshToken: "rt-\(UUID().uuidString)")
    }
}

/// A store that counts every call before passing it on.
final class CountingStore: TokenStore {
    let base: any TokenStore
    let calls = Locked(0)
    init(_ base: any TokenStore) { self.base = base }
    func load(forKey key: String) async throws -> Data? {
        calls.withLock { $0 += 1 }
        return try await base.load(forKey: key)
    }
    func save(_ data: Data, forKey key: String) async throws {
        calls.withLock { $0 += 1 }
        try await base.save(data, forKey: key)
    }
    func removeValue(forKey key: String) async throws {
        calls.withLock { $0 += 1 }
        try await base.removeValue(forKey: key)
    }
    var coordinatesProcesses: Bool { base.coordinatesProcesses }
    func withRefreshLock<Value: Sendable>(
        forKey key: String, timeout: TimeInterval, _ body: @Sendable () async throws -> Value
    ) async throws -> Value {
        calls.withLock { $0 += 1 }
        return try await base.withRefreshLock(forKey: key, timeout: timeout, body)
    }
    func withRefreshLock<Value: Sendable>(
        forKey key: String, timeout: TimeInterval, adoptingAfterWait adopt: @Sendable () async throws -> Value?,
        _ body: @Sendable () async throws -> Value
    ) async throws -> Value {
        calls.withLock { $0 += 1 }
        return try await base.withRefreshLock(forKey: key, timeout: timeout, adoptingAfterWait: adopt, body)
    }
}

func sessionBenchmarks() {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("authreq-bench-\(getpid())")
    let metrics = ["no store", "FileTokenStore, coordinated"].map {
        BenchmarkMetric.custom("refresh µs: \($0)", polarity: .prefersSmaller, useScalingFactor: false)
    }
    let order = Locked(0)
    Benchmark(
        "Store: one refresh, without a store and coordinated through a FileTokenStore, interleaved",
        configuration: .init(
            metrics: [.wallClock, .throughput] + metrics, maxDuration: .seconds(6), maxIterations: 400)
    ) { benchmark in
        let storeFirst = order.next() % 2 == 1
        for variant in storeFirst ? [1, 0] : [0, 1] {
            let authenticator = OAuthAuthenticator(
                flow: InstantFlow(),
                token: Fixtures.expiredToken(),
                store: variant == 1 ? FileTokenStore(directory: folder) : nil
            )
            _ = try await authenticator.currentCredential()  // the initial save is not part of a refresh
            let begin = ContinuousClock.now
            blackHole(try await authenticator.validCredential())
            benchmark.measurement(metrics[variant], Int((ContinuousClock.now - begin) / .nanoseconds(1)) / 1_000)
        }
    }

    let storeCalls = BenchmarkMetric.custom("store calls per 10000 requests", polarity: .prefersSmaller)
    Benchmark(
        "Store: 10000 requests with a valid token",
        configuration: .init(
            metrics: [.wallClock, .throughput, storeCalls], maxDuration: .seconds(4), maxIterations: 20)
    ) { benchmark in
        let store = CountingStore(FileTokenStore(directory: folder))
        let authenticator = OAuthAuthenticator(flow: InstantFlow(), token: Fixtures.validToken(), store: store)
        let resource = AuthenticatedMe(
            authenticator: authenticator, transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
        _ = try await resource.request()  // the initial save
        let before = store.calls.withLock { $0 }
        for _ in 0..<10_000 { blackHole(try await resource.request()) }
        benchmark.measurement(storeCalls, store.calls.withLock { $0 } - before)
    }
}
