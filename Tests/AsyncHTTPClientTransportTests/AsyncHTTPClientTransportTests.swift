#if AsyncHTTPClient
    import AsyncHTTPClient
    import AsyncHTTPClientTransport
    import AuthenticatedRequests
    import Foundation
    import NIOPosix
    import Testing
    import TestSupport

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The same rule as the default transport, over real loopback sockets.
    @Suite struct AsyncHTTPClientTransportTests {
        @Test func aCrossOriginRedirectDropsTheAuthorizationHeader() async throws {
            let outcome = try await followRedirect(with: AsyncHTTPClientTransport(), crossOrigin: true)
            #expect(outcome.status == 200)
            #expect(outcome.body == #"{"name":"Ada"}"#)
            #expect(outcome.firstAuthorization == "Bearer secret-token")
            #expect(outcome.followedURI == "/landing")
            #expect(outcome.followedAuthorization == nil)
        }

        @Test func aSameOriginRedirectKeepsTheAuthorizationHeader() async throws {
            let outcome = try await followRedirect(with: AsyncHTTPClientTransport(), crossOrigin: false)
            #expect(outcome.followedURI == "/landing")
            #expect(outcome.followedAuthorization == "Bearer secret-token")
        }

        @Test(arguments: [301, 302, 303, 307, 308])
        func aSecretBodyIsNeverSentToTheRedirectTarget(status: Int) async throws {
            // AsyncHTTPClient re-sent the body of a 307/308 to the target, https to http included.
            let outcome = try await postSecretThroughRedirect(with: AsyncHTTPClientTransport(), status: status)
            #expect(outcome.status == status, "the 3xx itself comes back: \(outcome.error ?? "")")
            #expect(outcome.targetRequests.isEmpty, "the target received nothing")
        }

        @Test func aServerThatDripsItsBodyIsCutAtTheDeadline() async throws {
            // AsyncHTTPClient's own deadline ends at the response head, not the body.
            let server = try await MisbehavingServer(.drip(interval: 0.2, length: 10_000))
            defer { Task { try await server.shutdown() } }
            let error = await #expect(throws: HTTPTransportError.self) {
                try await AsyncHTTPClientTransport().send(
                    URLRequest(url: server.baseURL.appendingPathComponent("token")), options: .init(timeout: 1))
            }
            #expect(error?.code == .timedOut)
        }

        @Test func cancellingTheCallerStopsABodyOnItsWayWithCancellationError() async throws {
            // The body is collected in a task of its own: the caller's cancellation reaches it, and
            // is reported as such, not as a timeout or a transport failure.
            let server = try await MisbehavingServer(.drip(interval: 0.2, length: 10_000))
            defer { Task { try await server.shutdown() } }
            let sending = Task {
                try await AsyncHTTPClientTransport().send(
                    URLRequest(url: server.baseURL.appendingPathComponent("token")), options: .init(timeout: 60))
            }
            try await Task.sleep(for: .milliseconds(500))
            sending.cancel()
            let started = ContinuousClock.now
            await #expect(throws: CancellationError.self) { try await sending.value }
            #expect(ContinuousClock.now - started < .seconds(30), "stopped long before the 60 s deadline")
        }

        @Test func aClientShutDownWithABodyTimerArmedLeavesTheOtherClientsDeadlinesWorking() async throws {
            // Each client keeps its bodies' deadlines on its own event loops: the timer armed on a
            // client that is then shut down is gone, and must not stand for the other client's.
            let server = try await MisbehavingServer(.drip(interval: 0.2, length: 10_000))
            defer { Task { try await server.shutdown() } }
            let url = server.baseURL.appendingPathComponent("token")
            let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let own = HTTPClient(eventLoopGroup: loops)
            let transport = AsyncHTTPClientTransport(client: own)
            let first = Task { try await transport.send(URLRequest(url: url), options: .init(timeout: 2)) }
            try await Task.sleep(for: .milliseconds(600))  // its head is in; its body drips
            first.cancel()
            _ = await first.result
            try await own.shutdown()
            try await loops.shutdownGracefully()
            let started = ContinuousClock.now
            let outcome = try await withThrowingTaskGroup(of: String.self) { group in
                group.addTask {
                    do {
                        _ = try await transport.send(
                            URLRequest(url: url), options: .init(followsRedirects: false, timeout: 3))
                        return "answered"
                    } catch let error as HTTPTransportError {
                        return "\(error.code)"
                    }
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(20))
                    return "still collecting after 20 s"
                }
                defer { group.cancelAll() }
                return try await group.next() ?? "nothing"
            }
            #expect(outcome == "\(HTTPTransportError.Code.timedOut)")
            #expect(ContinuousClock.now - started < .seconds(15))
        }

        @Test func aServerThatNeverAnswersIsCutAtTheDeadline() async throws {
            let server = try await MisbehavingServer(.hang)
            defer { Task { try await server.shutdown() } }
            let error = await #expect(throws: HTTPTransportError.self) {
                try await AsyncHTTPClientTransport().send(
                    URLRequest(url: server.baseURL.appendingPathComponent("token")), options: .init(timeout: 0.5))
            }
            #expect(error?.code == .timedOut)
        }

        @Test func aBodyOverTheCapIsRefusedWhileReading() async throws {
            let server = try await LoopbackHTTPServer { _ in .init(body: String(repeating: "x", count: 2 << 20)) }
            defer { Task { try await server.shutdown() } }
            let error = await #expect(throws: HTTPTransportError.self) {
                try await AsyncHTTPClientTransport().send(
                    URLRequest(url: server.baseURL.appendingPathComponent("token")), options: .authorizationServer())
            }
            #expect(error?.code == .responseTooLarge)
        }

        @Test func aChunkedBodyOverTheCapIsRefusedWhileReading() async throws {
            // No Content-Length to refuse it by: the collection stops at the cap.
            let server = try await MisbehavingServer(.chunked(count: 48, size: 64 << 10))
            defer { Task { try await server.shutdown() } }
            let error = await #expect(throws: HTTPTransportError.self) {
                try await AsyncHTTPClientTransport().send(
                    URLRequest(url: server.baseURL.appendingPathComponent("token")),
                    options: .init(maximumResponseSize: 1 << 20))
            }
            #expect(error?.code == .responseTooLarge)
            let whole = try await AsyncHTTPClientTransport().send(
                URLRequest(url: server.baseURL.appendingPathComponent("token")),
                options: .init(maximumResponseSize: 4 << 20))
            #expect(whole.0.count == 48 * (64 << 10), "every part collected, in one body")
        }

        @Test func aBodyDeclaredOverTheCapIsRefusedBeforeItIsRead() async throws {
            // One byte every 0.2 s of a declared 10 MB: reading it would end at the deadline.
            let server = try await MisbehavingServer(.drip(interval: 0.2, length: 10_000_000))
            defer { Task { try await server.shutdown() } }
            let error = await #expect(throws: HTTPTransportError.self) {
                try await AsyncHTTPClientTransport().send(
                    URLRequest(url: server.baseURL.appendingPathComponent("token")),
                    options: .init(timeout: 120, maximumResponseSize: 1 << 20))
            }
            #expect(error?.code == .responseTooLarge)
        }

        @Test func anAuthenticatedResourceWorksOverIt() async throws {
            let server = try await LoopbackHTTPServer { request in
                request.header("Authorization") == "Bearer access-0"
                    ? .init(headers: [("Content-Type", "application/json")], body: #"{"name":"Ada"}"#)
                    : .init(status: 401, headers: [("WWW-Authenticate", "Bearer")])
            }
            defer { Task { try await server.shutdown() } }
            let authenticator = OAuthAuthenticator(flow: FakeFlow(), token: OAuthToken(accessToken: "access-0"))
            let me = Me(
                authenticator: authenticator, transport: AsyncHTTPClientTransport(),
                url: server.baseURL.appendingPathComponent("me"))
            #expect(try await me.request().name == "Ada")
            #expect(server.requests.map(\.method) == ["GET"])
            #expect(server.requests.first?.header("Authorization") == "Bearer access-0")
        }
    }
#endif
