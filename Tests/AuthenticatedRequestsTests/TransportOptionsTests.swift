import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 11, items 2 and 7, for the default transport over real loopback sockets: a request that
/// carries a secret follows no redirect, and every exchange with the authorization server ends
/// within its deadline, however the server misbehaves.
@Suite struct TransportOptionsTests {
    @Test(arguments: [301, 302, 303, 307, 308])
    func aSecretBodyIsNeverSentToTheRedirectTarget(status: Int) async throws {
        let outcome = try await postSecretThroughRedirect(with: URLSessionTransport(), status: status)
        #expect(outcome.status == status, "the 3xx itself comes back: \(outcome.error ?? "")")
        #expect(outcome.targetRequests.isEmpty, "the target received nothing")
    }

    @Test func aRedirectFromHTTPSToHTTPCarriesNoCredential() {
        var request = URLRequest(url: URL(string: "http://api.example.com/me")!)
        request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
        request.setValue("DPoP-proof", forHTTPHeaderField: "DPoP")
        let followed = CrossOriginRedirectGuard.redirect(
            request, from: URL(string: "https://api.example.com/me")!)
        #expect(followed.value(forHTTPHeaderField: "Authorization") == nil)
        #expect(followed.value(forHTTPHeaderField: "DPoP") == nil)
    }

    @Test func aServerThatNeverAnswersIsCutAtTheDeadline() async throws {
        let server = try await MisbehavingServer(.hang)
        defer { Task { try await server.shutdown() } }
        let error = await #expect(throws: HTTPTransportError.self) {
            try await URLSessionTransport().send(
                URLRequest(url: server.baseURL.appendingPathComponent("token")), options: .init(timeout: 0.5))
        }
        #expect(error?.code == .timedOut)
    }

    @Test func aServerThatDripsItsBodyIsCutAtTheDeadline() async throws {
        // One byte every 0.2 s: URLSession's own timeout restarts with every byte.
        let server = try await MisbehavingServer(.drip(interval: 0.2, length: 10_000))
        defer { Task { try await server.shutdown() } }
        let started = Date()
        let error = await #expect(throws: HTTPTransportError.self) {
            try await URLSessionTransport().send(
                URLRequest(url: server.baseURL.appendingPathComponent("token")), options: .init(timeout: 1))
        }
        #expect(error?.code == .timedOut)
        #expect(Date().timeIntervalSince(started) < 60, "bounded, not the server's pace (10,000 bytes × 0.2 s)")
    }

    @Test func aResetIsATransportFailure() async throws {
        let server = try await MisbehavingServer(.reset)
        defer { Task { try await server.shutdown() } }
        let error = await #expect(throws: HTTPTransportError.self) {
            try await URLSessionTransport().send(
                URLRequest(url: server.baseURL.appendingPathComponent("token")), options: .authorizationServer())
        }
        #expect(error?.code == .connectionLost)
        #expect(error?.underlyingError is URLError, "URLSession's own error is kept")
    }

    @Test func theDefaultImplementationEnforcesDeadlineSizeAndRedirects() async throws {
        let slow = InMemoryTransport { request in
            try await Task.sleep(nanoseconds: 10_000_000_000)
            return try InMemoryTransport.reply(to: request)
        }
        let request = URLRequest(url: URL(string: "https://auth.example.com/token")!)
        let timedOut = await #expect(throws: HTTPTransportError.self) {
            try await slow.send(request, options: .init(timeout: 0.1))
        }
        #expect(timedOut?.code == .timedOut)

        let big = InMemoryTransport { try InMemoryTransport.reply(to: $0, body: Data(count: 2 << 20)) }
        let tooLarge = await #expect(throws: HTTPTransportError.self) {
            try await big.send(request, options: .authorizationServer())
        }
        #expect(tooLarge?.code == .responseTooLarge)

        let follower = InMemoryTransport { _ in
            let response = ResponseHead(statusCode: 200, url: URL(string: "https://evil.example.net/token")!)
            return (Data(), response)
        }
        let redirected = await #expect(throws: HTTPTransportError.self) {
            try await follower.send(request, options: .authorizationServer())
        }
        #expect(redirected?.code == .redirected)
        #expect(redirected?.redirectOrigin == "https://evil.example.net:443")
    }

    @Test func cancellingTheCallerEndsTheWaitAtOnce() async throws {
        let server = try await MisbehavingServer(.hang)
        defer { Task { try await server.shutdown() } }
        let task = Task {
            try await URLSessionTransport().send(
                URLRequest(url: server.baseURL.appendingPathComponent("token")), options: .init(timeout: 60))
        }
        #expect(await eventually(1_000_000) { server.requestCount == 1 })
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}

/// Issue 14: a transport around an app's own `URLSession` keeps the redirect rules.
@Suite struct WrappedSessionTests {
    @Test func anAppsSessionKeepsTokensHomeAndSecretsUnredirected() async throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["X-App": "mine"]
        let appSession = URLSession(configuration: configuration)
        let transport = URLSessionTransport(session: appSession)
        let outcome = try await followRedirect(with: transport, crossOrigin: true)
        #expect(outcome.status == 200)
        #expect(outcome.firstAuthorization == "Bearer secret-token")
        #expect(outcome.followedAuthorization == nil, "stripped on the way to another origin")
        let secret = try await postSecretThroughRedirect(with: transport, status: 307)
        #expect(secret.status == 307)
        #expect(secret.targetRequests.isEmpty)
    }

    @Test func theAppsConfigurationIsUsed() async throws {
        let server = try await LoopbackHTTPServer { request in .init(body: request.header("X-App") ?? "none") }
        defer { Task { try await server.shutdown() } }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["X-App": "mine"]
        let transport = URLSessionTransport(session: URLSession(configuration: configuration))
        let (body, _) = try await transport.send(URLRequest(url: server.baseURL.appendingPathComponent("x")))
        #expect(String(decoding: body, as: UTF8.self) == "mine")
    }
}
