import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 11, item 3: another process on the machine can neither end a sign-in nor exhaust the
/// loopback receiver. Real sockets throughout.
@Suite struct LoopbackReceiverHardeningTests {
    let clock = TestClock()
    let tokens = TokenServer()

    func get(_ url: URL) async throws -> (Int, String) {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(from: url)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    func callback(_ receiver: LoopbackRedirectReceiver, _ query: String) -> URL {
        URL(string: receiver.redirectURI.absoluteString + "?" + query)!
    }

    @Test func forgedRedirectsGetAnErrorPageAndTheRealOneStillCompletesTheSignIn() async throws {
        let server = try await makeAuthorizationServer()
        defer { Task { try await server.shutdown() } }
        tokens.reply(json: #"{"access_token":"at","token_type":"Bearer","expires_in":300}"#)
        let forgedPages = Locked<[(Int, String)]>([])
        let opener = ClosureOpener { url in
            // Another local process knows the port (it can scan for it) but not the state.
            let redirect = try #require(query(url)["redirect_uri"].flatMap(URL.init(string:)))
            for forged in ["code=evil&state=WRONG", "code=evil", "error=access_denied&state=WRONG", "state="] {
                let page = try await self.get(URL(string: redirect.absoluteString + "?" + forged)!)
                forgedPages.withLock { $0.append(page) }
            }
            try await BrowserSimulator().open(url)
        }
        let manager = CodeFlowManager(
            configuration: AuthenticationConfiguration(
                authorizationEndpoint: server.baseURL.appendingPathComponent("authorize"),
                tokenEndpoint: tokenURL, client: .none(id: "cli"),
                redirectURI: URL(string: "http://127.0.0.1/callback")!),
            userAgent: LoopbackUserAgent(opener: opener, timeout: 30, onBrowserUnavailable: { _, _ in }),
            context: tokens.context(clock: clock)
        )
        let result = try await manager.authorize()
        #expect(result.token.accessToken == "at")
        let pages = forgedPages.withLock { $0 }
        #expect(pages.count == 4)
        for (status, page) in pages {
            #expect(status == 400)
            #expect(page.contains("not the response to the sign-in in progress"))
            #expect(!page.contains("Sign-in finished"))
        }
        #expect(tokens.requests.count == 1)
        #expect(tokens.requests.first?.form["code"] == "code-123")
    }

    @Test func idleConnectionsAreClosedWithinTheTimeout() async throws {
        let receiver = try await LoopbackRedirectReceiver.start(
            path: "/callback", limits: .init(connectionTimeout: 0.3))
        defer { Task { await receiver.close() } }
        let connection = try #require(RawConnection(port: receiver.redirectURI.port ?? 0))
        connection.send("GET /callback?sta")  // half a request, then nothing
        let (_, closed) = connection.readUntilClosed(within: 10)
        #expect(closed)
        #expect(await eventually(1_000_000) { receiver.openConnections == 0 })
    }

    @Test func manyIdleConnectionsCannotLockTheBrowserOut() async throws {
        let receiver = try await LoopbackRedirectReceiver.start(
            path: "/callback", limits: .init(maximumConnections: 8, connectionTimeout: 60))
        defer { Task { await receiver.close() } }
        receiver.expect(state: "the-state")
        let port = try #require(receiver.redirectURI.port)
        var idle: [RawConnection] = []
        for _ in 0..<100 { if let connection = RawConnection(port: port) { idle.append(connection) } }
        #expect(idle.count == 100)
        #expect(await eventually(1_000_000) { receiver.openConnections <= 8 })
        let waiting = Task { try await receiver.waitForRedirect(timeout: 30) }
        let (status, page) = try await get(callback(receiver, "code=c&state=the-state"))
        #expect(status == 200)
        #expect(page.contains("Sign-in finished"))
        #expect(try await waiting.value.query?.contains("code=c") == true)
    }

    @Test func eachConnectionGetsOneResponseThenIsClosed() async throws {
        let receiver = try await LoopbackRedirectReceiver.start(path: "/callback")
        defer { Task { await receiver.close() } }
        receiver.expect(state: "the-state")
        let connection = try #require(RawConnection(port: receiver.redirectURI.port ?? 0))
        connection.send(
            "GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                + "GET /callback?code=c&state=the-state HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let (text, closed) = connection.readUntilClosed(within: 10)
        #expect(closed)
        #expect(text.components(separatedBy: "HTTP/1.1 ").count == 2, "one response: \(text)")
        #expect(text.hasPrefix("HTTP/1.1 404"))
        // The pipelined redirect was ignored; the flow still waits for one on its own connection.
        let waiting = Task { try await receiver.waitForRedirect(timeout: 30) }
        let (status, _) = try await get(callback(receiver, "code=c&state=the-state"))
        #expect(status == 200)
        _ = try await waiting.value
    }

    @Test(arguments: [
        "NOT HTTP AT ALL\r\n\r\n", "GET /callback?state=forged HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "GET /elsewhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    ])
    func everyAnswerClosesItsConnectionAtOnceNotAtTheIdleDeadline(request: String) async throws {
        // The idle deadline is a minute: a connection still open after the answer would be seen.
        let receiver = try await LoopbackRedirectReceiver.start(
            path: "/callback", limits: .init(connectionTimeout: 60))
        defer { Task { await receiver.close() } }
        receiver.expect(state: "the-state")
        let connection = try #require(RawConnection(port: receiver.redirectURI.port ?? 0))
        connection.send(request)
        let (text, closed) = connection.readUntilClosed(within: 20)
        #expect(closed, "closed after its one response: \(text)")
        #expect(text.hasPrefix("HTTP/1.1 400") || text.hasPrefix("HTTP/1.1 404"))
        #expect(await eventually(1_000_000) { receiver.openConnections == 0 })
    }

    /// A redirect URI with a fixed port (for servers that compare it exactly) is listened on again
    /// right after a sign-in there ended, although the receiver closed that sign-in's connection
    /// itself; and never by two receivers at once.
    @Test func aFixedPortIsListenedOnAgainRightAfterASignInEnded() async throws {
        let first = try await LoopbackRedirectReceiver.start(path: "/callback")
        let port = try #require(first.redirectURI.port)
        first.expect(state: "one")
        let waiting = Task { try await first.waitForRedirect(timeout: 30) }
        // The browser's connection, which the receiver closes after its one answer.
        let browser = try #require(RawConnection(port: port))
        browser.send("GET /callback?code=c&state=one HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let (page, closed) = browser.readUntilClosed(within: 10)
        #expect(closed && page.hasPrefix("HTTP/1.1 200"), "\(page)")
        _ = try await waiting.value
        await #expect(throws: (any Error).self) {
            try await LoopbackRedirectReceiver.start(path: "/callback", port: port)
        }
        await first.close()
        let second = try await LoopbackRedirectReceiver.start(path: "/callback", port: port)
        defer { Task { await second.close() } }
        #expect(second.redirectURI.port == port)
        second.expect(state: "two")
        let waitingAgain = Task { try await second.waitForRedirect(timeout: 30) }
        #expect(try await get(callback(second, "code=c&state=two")).0 == 200)
        _ = try await waitingAgain.value
    }

    @Test func noConnectionOutlivesTheFlow() async throws {
        let receiver = try await LoopbackRedirectReceiver.start(
            path: "/callback", limits: .init(connectionTimeout: 60))
        let port = try #require(receiver.redirectURI.port)
        let connection = try #require(RawConnection(port: port))
        #expect(await eventually(1_000_000) { receiver.openConnections == 1 })
        await receiver.close()
        let (_, closed) = connection.readUntilClosed(within: 10)
        #expect(closed)
        #expect(await isListening(port: port) == false)
    }

    @Test(arguments: [
        "http://auth.example.com/authorize", "file:///etc/passwd", "javascript:alert(1)",
        "ftp://auth.example.com/authorize",
    ])
    func anUnsafeAuthorizationEndpointOpensNothing(endpoint: String) async throws {
        let opener = IdleOpener()
        let manager = CodeFlowManager(
            configuration: AuthenticationConfiguration(
                authorizationEndpoint: URL(string: endpoint)!, tokenEndpoint: tokenURL, client: .none(id: "cli"),
                redirectURI: URL(string: "http://127.0.0.1/callback")!),
            userAgent: LoopbackUserAgent(opener: opener, timeout: 1, onBrowserUnavailable: { _, _ in }),
            context: tokens.context(clock: clock)
        )
        let error = await #expect(throws: CodeFlowError.self) { try await manager.authorize() }
        #expect(error?.code == .insecureAuthorizationEndpoint)
        #expect(opener.opened.withLock { $0.isEmpty })
    }

    @Test(arguments: ["file:///etc/passwd", "javascript:alert(1)", "mailto:a@example.com"])
    func theSystemOpenerRefusesWhatIsNotAWebPage(url: String) async throws {
        let error = await #expect(throws: CodeFlowError.self) {
            try await SystemBrowserOpener(environment: ["BROWSER": "/bin/true"]).open(URL(string: url)!)
        }
        #expect(error?.code == .insecureAuthorizationEndpoint)
    }

    @Test func aCustomSchemeAgentIgnoresARedirectWithTheWrongState() async throws {
        let agent = CustomSchemeUserAgent { _ in }
        let session = try await agent.begin(redirectURI: URL(string: "com.example.app:/oauth")!)
        let presenting = Task {
            try await session.present(URL(string: "https://auth.example.com/authorize?state=right-state")!)
        }
        #expect(
            await eventually(1_000_000) { agent.handleRedirect(URL(string: "com.example.app:/oauth?probe")!) == false })
        #expect(agent.handleRedirect(URL(string: "com.example.app:/oauth?code=x&state=wrong")!) == false)
        #expect(agent.handleRedirect(URL(string: "com.example.app:/oauth?code=x")!) == false)
        var accepted = false
        for _ in 0..<100_000 where !accepted {
            accepted = agent.handleRedirect(URL(string: "com.example.app:/oauth?code=x&state=right-state")!)
            if !accepted { await Task.yield() }
        }
        #expect(accepted)
        #expect(try await presenting.value.absoluteString.contains("state=right-state"))
        await session.close()
    }
}

/// An opener that runs a closure.
struct ClosureOpener: BrowserOpener {
    let body: @Sendable (URL) async throws -> Void
    init(_ body: @escaping @Sendable (URL) async throws -> Void) { self.body = body }
    func open(_ url: URL) async throws { try await body(url) }
}
