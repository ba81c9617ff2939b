// Issue 17: what a DPoP request costs over a bearer request on the in-memory transport: a proof
// per request (claims, SHA-256 of the token for `ath`, a P-256 signature through jwt-kit).
import AuthenticatedRequests
import Benchmark
import Crypto
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
    // Issue 36: a proof against one ES256 signature of the same key by swift-crypto (the least a
    // proof can cost), in batches of 1,000 alternating in each iteration; the ratio is paired.
    let pairMetrics =
        ["DPoP proof", "ES256 signature"].map {
            BenchmarkMetric.custom("ns per \($0)", polarity: .prefersSmaller, useScalingFactor: false)
        } + [
            BenchmarkMetric.custom("ratio x1000: proof / signature", polarity: .prefersSmaller, useScalingFactor: false)
        ]
    let sameKey = Locked<(DPoPProver, BoundKey, P256.Signing.PrivateKey)?>(nil)
    let pairOrder = Locked(0)
    Benchmark(
        "DPoP: proof vs ES256 signature of the same key, interleaved",
        configuration: .init(
            metrics: [.wallClock, .throughput] + pairMetrics, maxDuration: .seconds(8), maxIterations: 1_000,
            setup: {
                let prover = DPoPProver()
                let key = try await prover.key(for: nil)
                let p256 = try P256.Signing.PrivateKey(rawRepresentation: key.storedKey)
                sameKey.withLock { $0 = (prover, key, p256) }
            })
    ) { benchmark in
        guard let (prover, key, p256) = sameKey.withLock({ $0 }) else { return }
        // A signing input as long as a proof's (header with the JWK, claims with ath).
        let signingInput = Data(String(repeating: "e", count: 420).utf8)
        let first = pairOrder.next() % 2
        var nanoseconds = [0, 0]
        for index in [first, 1 - first] {
            let begin = ContinuousClock.now
            if index == 0 {
                // The request is the caller's: made once, its DPoP header replaced by each proof.
                var request = URLRequest(url: Fixtures.apiURL)
                for _ in 0..<batch {
                    _ = try prover.proveImmediately(&request, with: key, accessToken: "benchmark-access-token")
                }
                blackHole(request)
            } else {
                for _ in 0..<batch { blackHole(try p256.signature(for: signingInput).rawRepresentation) }
            }
            nanoseconds[index] = Int((ContinuousClock.now - begin) / .nanoseconds(1)) / batch
        }
        benchmark.measurement(pairMetrics[0], nanoseconds[0])
        benchmark.measurement(pairMetrics[1], nanoseconds[1])
        benchmark.measurement(pairMetrics[2], nanoseconds[0] * 1000 / max(nanoseconds[1], 1))
    }

    let input = Data(String(repeating: "e", count: 400).utf8)
    Benchmark("DPoP: one P-256 signature through jwt-kit", configuration: partsConfiguration) { _ in
        guard let (_, _, key) = prepared.withLock({ $0 }) else { return }
        blackHole(try key.sign(input))
    }
}
