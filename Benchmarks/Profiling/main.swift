// Sends N requests over the in-memory transport, plain or through an OAuthAuthenticator, or N
// GETs of nginx on loopback ($AUTHREQ_BENCH_NGINX) by bare AsyncHTTPClient or by the SDK on
// AsyncHTTPClientTransport, for Benchmarks/profile to count their instructions under callgrind.
// (or by bare URLSession and by the SDK on URLSessionTransport).
// Usage: RequestProfile plain|authenticated|dpop|bare-ahc|ahc|bare-urlsession|urlsession N
import AsyncHTTPClientTransport
import AuthenticatedRequests
import DPoP
import Dispatch
import Foundation
import RequestFixtures

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A flow that is never asked for a token: the token given at creation stays valid.
struct NoRefreshFlow: OAuthFlow {
    let storeKey = "profile@https://auth.example.com/token"

    func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        throw URLError(.userAuthenticationRequired)
    }

    func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        throw URLError(.userAuthenticationRequired)
    }
}

let arguments = CommandLine.arguments
let modes = ["plain", "authenticated", "dpop", "bare-ahc", "ahc", "bare-urlsession", "urlsession"]
guard arguments.count == 3, modes.contains(arguments[1]), let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: RequestProfile \(modes.joined(separator: "|")) N\n".utf8))
    exit(2)
}
let authenticated = arguments[1] != "plain"
let dpop = arguments[1] == "dpop"

/// The requests, after 100 of each kind to warm up; both runs do the same warm-up, so it cancels
/// out of the difference.
func run() async throws {
    if arguments[1].hasSuffix("ahc") || arguments[1].hasSuffix("urlsession") { return try await runLoopback() }
    let plain = PlainMe(transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
    let authenticator: OAuthAuthenticator
    if dpop {
        // A DPoP-bound token: every request also signs a proof.
        let prover = DPoPProver()
        var token = Fixtures.validToken()
        token.tokenType = "DPoP"
        token.boundKey = try await prover.key(for: nil)
        authenticator = OAuthAuthenticator(
            flow: NoRefreshFlow(), token: token, configuration: .init(proofOfPossession: prover))
    } else {
        authenticator = OAuthAuthenticator(flow: NoRefreshFlow(), token: Fixtures.validToken())
    }
    let viaAuthenticator = AuthenticatedMe(
        authenticator: authenticator, transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
    for _ in 0..<100 {
        _ = try await plain.request()
        _ = try await viaAuthenticator.request()
    }
    if authenticated {
        for _ in 0..<count { _ = try await viaAuthenticator.request() }
    } else {
        for _ in 0..<count { _ = try await plain.request() }
    }
}

/// N GETs of nginx's document: bare AsyncHTTPClient (with the same 60 s deadline and
/// `Authorization` field, the body collected and decoded), or an AuthenticatedResource on AsyncHTTPClientTransport; 100 of each
/// first, in both modes, so the warm-up cancels out of the difference.
func runLoopback() async throws {
    guard let base = ProcessInfo.processInfo.environment["AUTHREQ_BENCH_NGINX"].flatMap(URL.init(string:)) else {
        throw URLError(.badURL)
    }
    let url = base.appendingPathComponent("me.json")
    let onURLSession = arguments[1].hasSuffix("urlsession")
    let resource = AuthenticatedMe(
        authenticator: OAuthAuthenticator(flow: NoRefreshFlow(), token: Fixtures.validToken()),
        transport: onURLSession ? URLSessionTransport() : AsyncHTTPClientTransport(), url: url)
    let session = URLSession(configuration: .default)
    func bare() async throws {
        if onURLSession {
            _ = try await bareURLSessionGET(url, on: session)
        } else {
            _ = try await bareAsyncHTTPClientGET(url)
        }
    }
    for _ in 0..<100 {
        try await bare()
        _ = try await resource.request()
    }
    if arguments[1] == "ahc" || arguments[1] == "urlsession" {
        for _ in 0..<count { _ = try await resource.request() }
    } else {
        for _ in 0..<count { try await bare() }
    }
}

// A synchronous main that waits on a semaphore: valgrind crashes in dispatch_main's sigsuspend,
// which an async main ends in on Linux.
let done = DispatchSemaphore(value: 0)
let failure = Locked<String?>(nil)
Task.detached {
    do { try await run() } catch { failure.withLock { $0 = "\(error)" } }
    done.signal()
}
done.wait()
if let message = failure.withLock({ $0 }) {
    FileHandle.standardError.write(Data("RequestProfile failed: \(message)\n".utf8))
    exit(1)
}
