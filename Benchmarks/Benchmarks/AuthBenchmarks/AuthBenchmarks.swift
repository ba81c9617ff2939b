// The benchmarks of Benchmarks/README.md. Run them with Benchmarks/run, which starts nginx for
// the loopback ones and prints the summary table.
import AsyncHTTPClient
import AsyncHTTPClientTransport
import AuthenticatedRequests
import Benchmark
import Foundation
import RequestFixtures

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Requests per iteration of the loopback benchmarks.
let sequentialBatch = 200
let concurrency = 32
let perTask = 10

let benchmarks: @Sendable () -> Void = {
    parsingBenchmarks()
    sessionBenchmarks()
    fleetBenchmarks()
    fleetAtScaleBenchmarks()
    openIDBenchmarks()
    dpopBenchmarks()
    mcpBenchmarks()
    let timeAndAllocations: [BenchmarkMetric] = [.wallClock, .cpuTotal, .mallocCountTotal, .throughput]

    // 1. Overhead: the same in-memory request with and without authentication.
    Benchmark(
        "Overhead: Resource, no authentication",
        configuration: .init(metrics: timeAndAllocations, maxDuration: .seconds(3), maxIterations: 200_000)
    ) { benchmark in
        let resource = PlainMe(transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
        benchmark.startMeasurement()
        blackHole(try await resource.request())
    }

    let authenticator = OAuthAuthenticator(
        flow: SlowTokenEndpointFlow(delay: .milliseconds(50)),
        token: Fixtures.validToken()
    )
    Benchmark(
        "Overhead: AuthenticatedResource, valid token",
        configuration: .init(metrics: timeAndAllocations, maxDuration: .seconds(3), maxIterations: 200_000)
    ) { benchmark in
        let resource = AuthenticatedMe(
            authenticator: authenticator, transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
        benchmark.startMeasurement()
        blackHole(try await resource.request())
    }

    // The same two requests in batches of 1,000, alternating, each batch timed on its own: the
    // cost per request once running, without the harness's per-iteration task start (~10 µs,
    // with cold caches) that the two benchmarks above include.
    let batch = 1_000
    let batchMetrics = ["Resource, no authentication", "AuthenticatedResource, valid token"].map {
        BenchmarkMetric.custom("ns per request: \($0)", polarity: .prefersSmaller, useScalingFactor: false)
    }
    let batchOrder = Locked(0)
    Benchmark(
        "Overhead: batches of \(batch), interleaved",
        configuration: .init(
            metrics: [.wallClock, .throughput] + batchMetrics, maxDuration: .seconds(6), maxIterations: 1_000)
    ) { benchmark in
        let plain = PlainMe(transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
        let authenticated = AuthenticatedMe(
            authenticator: authenticator, transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
        let first = batchOrder.next() % 2
        var nanoseconds = [0, 0]
        for index in [first, 1 - first] {
            let begin = ContinuousClock.now
            if index == 0 {
                for _ in 0..<batch { blackHole(try await plain.request()) }
            } else {
                for _ in 0..<batch { blackHole(try await authenticated.request()) }
            }
            nanoseconds[index] = Int((ContinuousClock.now - begin) / .nanoseconds(1)) / batch
        }
        benchmark.measurement(batchMetrics[0], nanoseconds[0])
        benchmark.measurement(batchMetrics[1], nanoseconds[1])
    }

    // The floor: what Foundation charges for the one thing any authenticator must do, writing
    // the Authorization header into a URLRequest.
    Benchmark(
        "Floor: URLRequest(url:)",
        configuration: .init(metrics: timeAndAllocations, maxDuration: .seconds(2), maxIterations: 200_000)
    ) { _ in
        blackHole(URLRequest(url: Fixtures.apiURL))
    }
    let header = "Bearer benchmark-access-token"
    Benchmark(
        "Floor: URLRequest(url:) + setValue(Authorization)",
        configuration: .init(metrics: timeAndAllocations, maxDuration: .seconds(2), maxIterations: 200_000)
    ) { _ in
        var request = URLRequest(url: Fixtures.apiURL)
        request.setValue(header, forHTTPHeaderField: "Authorization")
        blackHole(request)
    }

    // 2. Loopback: nginx on 127.0.0.1 serving a small JSON document.
    if let nginx = ProcessInfo.processInfo.environment["AUTHREQ_BENCH_NGINX"].flatMap(URL.init(string:)) {
        let url = nginx.appendingPathComponent("me.json")
        let bare = URLSession(configuration: .default)
        let urlSessionTransport = URLSessionTransport()
        let ahcTransport = AsyncHTTPClientTransport()
        let loopbackAuthenticator = OAuthAuthenticator(
            flow: SlowTokenEndpointFlow(delay: .milliseconds(50)),
            token: Fixtures.validToken()
        )
        let loopbackConfiguration = Benchmark.Configuration(
            metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput],
            warmupIterations: 2,
            maxDuration: .seconds(8),
            maxIterations: 40
        )

        @Sendable func bareRequest() async throws { blackHole(try await bareURLSessionGET(url, on: bare)) }
        @Sendable func bareAHCRequest() async throws { blackHole(try await bareAsyncHTTPClientGET(url)) }
        @Sendable func authenticated(_ transport: any HTTPTransport) -> AuthenticatedMe {
            AuthenticatedMe(authenticator: loopbackAuthenticator, transport: transport, url: url)
        }
        @Sendable func concurrently(_ body: @escaping @Sendable () async throws -> Void) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<concurrency {
                    group.addTask { for _ in 0..<perTask { try await body() } }
                }
                try await group.waitForAll()
            }
        }

        // The three variants run inside each iteration, in an order that rotates, each timed on
        // its own: drift of the shared machine then falls on all of them alike.
        let variants: [(name: String, run: @Sendable () async throws -> Void)] = [
            ("bare URLSession", { try await bareRequest() }),
            ("URLSessionTransport", { blackHole(try await authenticated(urlSessionTransport).request()) }),
            ("AsyncHTTPClientTransport", { blackHole(try await authenticated(ahcTransport).request()) }),
            ("bare AsyncHTTPClient", { try await bareAHCRequest() }),
        ]
        func interleaved(
            _ label: String,
            _ batch: @escaping @Sendable (@escaping @Sendable () async throws -> Void) async throws -> Void
        ) {
            let metrics = variants.map {
                BenchmarkMetric.custom("\(label) µs: \($0.name)", polarity: .prefersSmaller, useScalingFactor: false)
            }
            // Throughput ratios of the batches of one iteration (x1000): the variants are paired
            // under the same machine state, which the separate percentiles above are not.
            let ratios = [
                "URLSessionTransport / bare", "AsyncHTTPClientTransport / URLSessionTransport",
                "AsyncHTTPClientTransport / bare AsyncHTTPClient",
            ].map {
                BenchmarkMetric.custom("\(label) ratio x1000: \($0)", polarity: .prefersLarger, useScalingFactor: false)
            }
            let rotation = Locked(0)
            Benchmark(
                "Loopback \(label), interleaved",
                configuration: .init(
                    metrics: [.wallClock, .throughput] + metrics + ratios,
                    warmupIterations: 2,
                    maxDuration: .seconds(45),
                    maxIterations: 60
                )
            ) { benchmark in
                let start = rotation.next()
                var micros = [Int](repeating: 1, count: variants.count)
                for offset in 0..<variants.count {
                    let index = (start + offset) % variants.count
                    let begin = ContinuousClock.now
                    try await batch(variants[index].run)
                    micros[index] = max(1, Int((ContinuousClock.now - begin) / .microseconds(1)))
                    benchmark.measurement(metrics[index], micros[index])
                }
                // Variants 0, 1, 2, 3: bare URLSession, URLSessionTransport, AsyncHTTPClientTransport,
                // bare AsyncHTTPClient. Each ratio is the throughput of the first over the second.
                benchmark.measurement(ratios[0], micros[0] * 1000 / micros[1])
                benchmark.measurement(ratios[1], micros[1] * 1000 / micros[2])
                benchmark.measurement(ratios[2], micros[3] * 1000 / micros[2])
            }
        }
        interleaved("sequential x\(sequentialBatch)") { request in
            for _ in 0..<sequentialBatch { try await request() }
        }
        interleaved("concurrent \(concurrency)x\(perTask)") { request in try await concurrently(request) }

        // Issue 36's targets: the SDK against the bare client of the same library, two batches per
        // iteration, which goes first alternating. (In the rotation of four above, the SDK's batch
        // on AsyncHTTPClient always came right after a URLSession batch, bare AsyncHTTPClient's
        // never did.)
        func pair(
            _ label: String, _ sdk: Int, against bare: Int,
            _ batch: @escaping @Sendable (@escaping @Sendable () async throws -> Void) async throws -> Void
        ) {
            let ratio = BenchmarkMetric.custom(
                "\(label) ratio x1000: \(variants[sdk].name) / \(variants[bare].name)", polarity: .prefersLarger,
                useScalingFactor: false)
            let order = Locked(0)
            Benchmark(
                "Loopback \(label), paired: \(variants[sdk].name) vs \(variants[bare].name)",
                configuration: .init(
                    metrics: [.wallClock, .throughput, ratio], warmupIterations: 2, maxDuration: .seconds(30),
                    maxIterations: 60)
            ) { benchmark in
                let first = order.next() % 2
                var micros = [1, 1]
                for slot in [first, 1 - first] {
                    let begin = ContinuousClock.now
                    try await batch(variants[slot == 0 ? sdk : bare].run)
                    micros[slot] = max(1, Int((ContinuousClock.now - begin) / .microseconds(1)))
                }
                benchmark.measurement(ratio, micros[1] * 1000 / micros[0])
            }
        }
        for (sdk, bare) in [(1, 0), (2, 3)] {
            pair("sequential x\(sequentialBatch)", sdk, against: bare) { request in
                for _ in 0..<sequentialBatch { try await request() }
            }
            pair("concurrent \(concurrency)x\(perTask)", sdk, against: bare) { request in
                try await concurrently(request)
            }
        }

        // Issue 36: allocations of one GET, process-wide (the event loops' too), bare AsyncHTTPClient
        // against the SDK on AsyncHTTPClientTransport; the difference is what the SDK allocates.
        let allocationConfiguration = Benchmark.Configuration(
            metrics: [.mallocCountTotal, .wallClock, .throughput], warmupIterations: 50, maxDuration: .seconds(4),
            maxIterations: 2_000)
        Benchmark("Allocations: one loopback GET, bare AsyncHTTPClient", configuration: allocationConfiguration) {
            _ in try await bareAHCRequest()
        }
        Benchmark(
            "Allocations: one loopback GET, AsyncHTTPClientTransport, authenticated",
            configuration: allocationConfiguration
        ) { _ in blackHole(try await authenticated(ahcTransport).request()) }
        Benchmark("Allocations: one loopback GET, bare URLSession", configuration: allocationConfiguration) { _ in
            try await bareRequest()
        }
        Benchmark(
            "Allocations: one loopback GET, URLSessionTransport, authenticated",
            configuration: allocationConfiguration
        ) { _ in blackHole(try await authenticated(urlSessionTransport).request()) }

        // Memory over 100,000 loopback requests: bare AsyncHTTPClient, then the SDK on it, each
        // growth read right after its last request (not a minute later).
        let bareGrowth = BenchmarkMetric.custom(
            "RSS growth KiB, 100k: bare AsyncHTTPClient", polarity: .prefersSmaller, useScalingFactor: false)
        let sdkGrowth = BenchmarkMetric.custom(
            "RSS growth KiB, 100k: AsyncHTTPClientTransport", polarity: .prefersSmaller, useScalingFactor: false)
        Benchmark(
            "Memory: 100000 loopback requests, bare AsyncHTTPClient and AsyncHTTPClientTransport",
            configuration: .init(metrics: [.throughput, bareGrowth, sdkGrowth], warmupIterations: 0, maxIterations: 1)
        ) { benchmark in
            let resource = authenticated(ahcTransport)
            for _ in 0..<1_000 {
                try await bareAHCRequest()
                blackHole(try await resource.request())
            }
            var before = residentMemoryKiB()
            for _ in 0..<100_000 { try await bareAHCRequest() }
            benchmark.measurement(bareGrowth, max(0, residentMemoryKiB() - before))
            before = residentMemoryKiB()
            for _ in 0..<100_000 { blackHole(try await resource.request()) }
            benchmark.measurement(sdkGrowth, max(0, residentMemoryKiB() - before))
            // The harness times only this empty span: a 50 s iteration would round its throughput,
            // which the JMH export requires, to zero. The figures of this benchmark are the two above.
            benchmark.startMeasurement()
            benchmark.stopMeasurement()
        }
    }

    // 3. Coalesced refresh: 10,000 concurrent requests, token endpoint answering after 50 ms.
    let refreshes = BenchmarkMetric.custom("refreshes", polarity: .prefersSmaller, useScalingFactor: false)
    let refreshDone = BenchmarkMetric.custom(
        "refresh returned after (ms)", polarity: .prefersSmaller, useScalingFactor: false)
    let coalescedConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, refreshes, refreshDone],
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 20
    )
    func tenThousand(expired: Bool, _ benchmark: Benchmark) async throws {
        let flow = SlowTokenEndpointFlow(delay: .milliseconds(50))
        let authenticator = OAuthAuthenticator(
            flow: flow, token: expired ? Fixtures.expiredToken() : Fixtures.validToken())
        let resource = AuthenticatedMe(
            authenticator: authenticator, transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
        let start = ContinuousClock.now
        benchmark.startMeasurement()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10_000 { group.addTask { blackHole(try await resource.request()) } }
            try await group.waitForAll()
        }
        benchmark.stopMeasurement()
        benchmark.measurement(refreshes, flow.refreshCount)
        if let finished = flow.finishedAt {
            let elapsed = finished - start
            benchmark.measurement(
                refreshDone,
                Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000))
        }
    }
    Benchmark("Coalesced refresh: 10000 concurrent, expired token", configuration: coalescedConfiguration) {
        benchmark in
        try await tenThousand(expired: true, benchmark)
    }
    Benchmark("Coalesced refresh: 10000 concurrent, valid token", configuration: coalescedConfiguration) { benchmark in
        try await tenThousand(expired: false, benchmark)
    }

    // What the runtime charges for 10,000 tasks waiting for one 50 ms job, without this package:
    // awaiting a Task's value (how the engine first waited) against continuations resumed
    // together (how SharedRefresh waits). Each waiter then does the plain in-memory request.
    Benchmark("Floor: 10000 tasks await one 50 ms Task's value", configuration: coalescedConfiguration) { _ in
        let plain = PlainMe(transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
        let job = Task { try await Task.sleep(for: .milliseconds(50)) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10_000 {
                group.addTask {
                    try await job.value
                    blackHole(try await plain.request())
                }
            }
            try await group.waitForAll()
        }
    }
    Benchmark(
        "Floor: 10000 tasks await one 50 ms refresh on continuations", configuration: coalescedConfiguration
    ) { _ in
        let plain = PlainMe(transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
        let waiters = Waiters()
        Task {
            try await Task.sleep(for: .milliseconds(50))
            waiters.resumeAll()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10_000 {
                group.addTask {
                    await waiters.wait()
                    blackHole(try await plain.request())
                }
            }
            try await group.waitForAll()
        }
    }

    // 4. Memory: 100,000 authenticated requests in one process.
    let growth = BenchmarkMetric.custom(
        "RSS growth KiB (1k -> 100k)", polarity: .prefersSmaller, useScalingFactor: false)
    let afterFirstThousand = BenchmarkMetric.custom(
        "RSS after 1k KiB", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark(
        "Memory: 100000 authenticated requests",
        configuration: .init(
            metrics: [.wallClock, .throughput, growth, afterFirstThousand], warmupIterations: 0, maxIterations: 1)
    ) { benchmark in
        let authenticator = OAuthAuthenticator(
            flow: SlowTokenEndpointFlow(delay: .milliseconds(50)), token: Fixtures.validToken())
        let resource = AuthenticatedMe(
            authenticator: authenticator, transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
        var baseline = 0
        for index in 0..<100_000 {
            if index == 1_000 { baseline = residentMemoryKiB() }
            blackHole(try await resource.request())
        }
        benchmark.measurement(afterFirstThousand, baseline)
        benchmark.measurement(growth, residentMemoryKiB() - baseline)
    }
}
