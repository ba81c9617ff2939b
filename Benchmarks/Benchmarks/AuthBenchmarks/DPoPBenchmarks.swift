// Issue 17: what a DPoP request costs over a bearer request on the in-memory transport: a proof
// per request (claims, SHA-256 of the token for `ath`, a P-256 signature through jwt-kit).
import AuthenticatedRequests
import Benchmark
import DPoP
import Foundation
import RequestFixtures

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

func dpopBenchmarks() {
    // Bearer and DPoP requests in batches of 1,000, alternating, each batch timed on its own, so
    // both see the same machine state; the difference of the two is the cost of DPoP.
    let batch = 1_000
    let metrics = ["Bearer request", "DPoP request"].map {
        BenchmarkMetric.custom("ns per request: \($0)", polarity: .prefersSmaller, useScalingFactor: false)
    }
    let authenticators = Locked<(bearer: OAuthAuthenticator, dpop: OAuthAuthenticator)?>(nil)
    let order = Locked(0)
    Benchmark(
        "DPoP: batches of \(batch), bearer and DPoP interleaved",
        configuration: .init(
            metrics: [.wallClock, .throughput] + metrics, maxDuration: .seconds(8), maxIterations: 1_000,
            setup: {
                let prover = DPoPProver()
                var token = Fixtures.validToken()
                token.tokenType = "DPoP"
                token.boundKey = try await prover.key(for: nil)
                let bearer = OAuthAuthenticator(
                    flow: SlowTokenEndpointFlow(delay: .milliseconds(50)), token: Fixtures.validToken())
                let dpop = OAuthAuthenticator(
                    flow: SlowTokenEndpointFlow(delay: .milliseconds(50)), token: token,
                    configuration: .init(proofOfPossession: prover))
                authenticators.withLock { $0 = (bearer, dpop) }
            })
    ) { benchmark in
        guard let (bearer, dpop) = authenticators.withLock({ $0 }) else { return }
        let requests = [bearer, dpop].map {
            AuthenticatedMe(authenticator: $0, transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
        }
        let first = order.next() % 2
        var nanoseconds = [0, 0]
        for index in [first, 1 - first] {
            let begin = ContinuousClock.now
            for _ in 0..<batch { blackHole(try await requests[index].request()) }
            nanoseconds[index] = Int((ContinuousClock.now - begin) / .nanoseconds(1)) / batch
        }
        benchmark.measurement(metrics[0], nanoseconds[0])
        benchmark.measurement(metrics[1], nanoseconds[1])
    }

    // Its parts: one proof, and the P-256 signature inside it.
    let prepared = Locked<(DPoPProver, BoundKey, SoftwareDPoPKey)?>(nil)
    let partsConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput], maxDuration: .seconds(3),
        maxIterations: 100_000,
        setup: {
            let prover = DPoPProver()
            let key = try await prover.key(for: nil)
            let software = try await SoftwareDPoPKey.generate()
            prepared.withLock { $0 = (prover, key, software) }
        })
    Benchmark("DPoP: one proof", configuration: partsConfiguration) { benchmark in
        guard let (prover, key, _) = prepared.withLock({ $0 }) else { return }
        var request = URLRequest(url: Fixtures.apiURL)
        benchmark.startMeasurement()
        try await prover.prove(&request, with: key, accessToken: "benchmark-access-token")
        benchmark.stopMeasurement()
        blackHole(request)
    }
    let input = Data(String(repeating: "e", count: 400).utf8)
    Benchmark("DPoP: one P-256 signature through jwt-kit", configuration: partsConfiguration) { _ in
        guard let (_, _, key) = prepared.withLock({ $0 }) else { return }
        blackHole(try key.sign(input))
    }
}
