import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension BrowserSimulator: BrowserOpener {}

/// An opener that does nothing: the user never comes back.
struct IdleOpener: BrowserOpener {
    let opened = Locked<[URL]>([])
    func open(_ url: URL) async throws { opened.withLock { $0.append(url) } }
}

/// Tests of the loopback receiver over real loopback sockets.
@Suite struct LoopbackUserAgentTests {
    let clock = TestClock()
    let tokens = TokenServer()

    func manager(
        server: LoopbackHTTPServer,
        opener: any BrowserOpener,
        timeout: TimeInterval = 30,
        issuer: String? = nil
    ) -> CodeFlowManager {
        var configuration = AuthenticationConfiguration(
            authorizationEndpoint: server.baseURL.appendingPathComponent("authorize"),
            tokenEndpoint: tokenURL,
            client: .none(id: "cli"),
            redirectURI: URL(string: "http://127.0.0.1/callback")!,
            scope: "profile"
        )
        configuration.issuer = issuer
        return CodeFlowManager(
            configuration: configuration,
            userAgent: LoopbackUserAgent(opener: opener, timeout: timeout, onBrowserUnavailable: { _, _ in }),
            context: tokens.context(clock: clock)
        )
    }

    func redirectPort(of opened: [URL]) throws -> Int {
        let redirect = try #require(opened.first.flatMap { query($0)["redirect_uri"] }.flatMap(URL.init(string:)))
        #expect(redirect.host == "127.0.0.1")
        #expect(redirect.path == "/callback")
        return try #require(redirect.port)
    }

    @Test func theExpectedRedirectCompletesTheFlowAndOtherPathsAreIgnored() async throws {
        let server = try await makeAuthorizationServer()
        defer { Task { try await server.shutdown() } }
        tokens.reply(json: #"{"access_token":"at","token_type":"Bearer","expires_in":300,"refresh_token":"rt"}"#)
        let browser = BrowserSimulator(extraPathsFirst: ["/favicon.ico"])
        let result = try await manager(server: server, opener: browser).authorize()

        #expect(result.token.accessToken == "at")
        #expect(await eventually(100_000) { browser.pages.withLock { $0.count == 2 } })
        let pages = browser.pages.withLock { $0 }
        #expect(pages.count == 2)
        #expect(pages.first?.contains("Not found") == true, "the favicon is answered and does not end the flow")
        #expect(pages.last?.contains("Sign-in finished") == true)
        #expect(pages.last?.contains("code-123") == false, "the page does not echo the code")
        let form = try #require(tokens.requests.first?.form)
        #expect(form["code"] == "code-123")
        #expect(form["code_verifier"]?.count == 64)
        let port = try redirectPort(of: browser.openedURLs.withLock { $0 })
        #expect(form["redirect_uri"] == "http://127.0.0.1:\(port)/callback")
        #expect(await isListening(port: port) == false, "the port is closed after success")
    }

    @Test func aRedirectWithTheWrongStateDoesNotEndTheFlowAndTheCodeIsNotExchanged() async throws {
        let server = try await makeAuthorizationServer { _ in ["code": "code-123", "state": "forged"] }
        defer { Task { try await server.shutdown() } }
        let browser = BrowserSimulator()
        let error = await #expect(throws: CodeFlowError.self) {
            try await manager(server: server, opener: browser, timeout: 1).authorize()
        }
        #expect(error?.code == .timedOut, "the receiver kept waiting for the real redirect")
        #expect(browser.pages.withLock { $0.last }?.contains("not the response to the sign-in in progress") == true)
        #expect(tokens.requests.isEmpty)
        #expect(await isListening(port: try redirectPort(of: browser.openedURLs.withLock { $0 })) == false)
    }

    @Test func aDeniedConsentIsATypedAccessDeniedAndThePageSaysSo() async throws {
        let server = try await makeAuthorizationServer { query in
            ["error": "access_denied", "error_description": "User denied", "state": query["state"] ?? ""]
        }
        defer { Task { try await server.shutdown() } }
        let browser = BrowserSimulator()
        let error = await #expect(throws: OAuthError.self) {
            try await manager(server: server, opener: browser).authorize()
        }
        #expect(error?.code == .accessDenied)
        #expect(error?.errorDescription == "User denied")
        #expect(await eventually(100_000) { browser.pages.withLock { !$0.isEmpty } })
        #expect(browser.pages.withLock { $0.last }?.contains("did not complete") == true)
        #expect(tokens.requests.isEmpty)
    }

    @Test func noRedirectEndsInATimeoutAndClosesThePort() async throws {
        let server = try await makeAuthorizationServer()
        defer { Task { try await server.shutdown() } }
        let opener = IdleOpener()
        let error = await #expect(throws: CodeFlowError.self) {
            try await manager(server: server, opener: opener, timeout: 0.2).authorize()
        }
        #expect(error?.code == .timedOut)
        #expect(await isListening(port: try redirectPort(of: opener.opened.withLock { $0 })) == false)
    }

    @Test func cancellationEndsTheWaitAndClosesThePort() async throws {
        let server = try await makeAuthorizationServer()
        defer { Task { try await server.shutdown() } }
        let opener = IdleOpener()
        let manager = manager(server: server, opener: opener)
        let task = Task { try await manager.authorize() }
        #expect(await eventually(100_000) { opener.opened.withLock { !$0.isEmpty } })
        let port = try redirectPort(of: opener.opened.withLock { $0 })
        #expect(await isListening(port: port), "listening while the flow waits")
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await isListening(port: port) == false)
    }

    @Test func aSecondStartCancelsTheFirst() async throws {
        let server = try await makeAuthorizationServer()
        defer { Task { try await server.shutdown() } }
        let opener = IdleOpener()
        let manager = manager(server: server, opener: opener, timeout: 5)
        let first = Task { try await manager.authorize() }
        #expect(await eventually(100_000) { opener.opened.withLock { $0.count == 1 } })
        let second = Task { try await manager.authorize() }
        await #expect(throws: CancellationError.self) { try await first.value }
        #expect(await eventually(100_000) { opener.opened.withLock { $0.count == 2 } })
        second.cancel()
        _ = await second.result
    }

    /// A public client's sign-in at `server`'s authorization endpoint through `agent`.
    func signIn(at server: LoopbackHTTPServer, through agent: LoopbackUserAgent) -> CodeFlowManager {
        CodeFlowManager(
            configuration: AuthenticationConfiguration(
                authorizationEndpoint: server.baseURL.appendingPathComponent("authorize"),
                tokenEndpoint: tokenURL,
                client: .none(id: "cli"),
                redirectURI: URL(string: "http://127.0.0.1/callback")!
            ),
            userAgent: agent,
            context: tokens.context(clock: clock)
        )
    }

    @Test func whenNoBrowserOpensTheUserIsToldTheURLAndTheFlowKeepsWaiting() async throws {
        let server = try await makeAuthorizationServer()
        defer { Task { try await server.shutdown() } }
        tokens.reply(json: #"{"access_token":"at","token_type":"Bearer"}"#)
        let told = Locked<[String]>([])
        let agent = LoopbackUserAgent(
            opener: SystemBrowserOpener(environment: ["BROWSER": "/nonexistent/browser"]),
            timeout: 30,
            onBrowserUnavailable: { _, error in told.withLock { $0.append("\(error)") } }
        )
        let manager = signIn(at: server, through: agent)
        let task = Task { try await manager.authorize() }
        #expect(await eventually(200_000) { told.withLock { !$0.isEmpty } })
        let message = try #require(told.withLock { $0.first })
        #expect(message.contains("Open this URL yourself"))
        let printedURL = try #require(
            message.components(separatedBy: "yourself to continue: ").last.flatMap(URL.init(string:)))
        try await BrowserSimulator().open(printedURL)  // the user opens it by hand
        #expect(try await task.value.token.accessToken == "at")
    }

    @Test func whileItWaitsForTheBrowserTheSignInSaysWhatItWaitsForAndNoSecret() async throws {
        let server = try await makeAuthorizationServer()
        defer { Task { try await server.shutdown() } }
        tokens.reply(json: #"{"access_token":"at","token_type":"Bearer"}"#)
        let waited = Locked<[LoopbackUserAgent.Waiting]>([])
        let agent = LoopbackUserAgent(
            opener: BrowserSimulator(), timeout: 30, onWaiting: { waiting in waited.withLock { $0.append(waiting) } })
        let manager = signIn(at: server, through: agent)
        #expect(try await manager.authorize().token.accessToken == "at")
        #expect(await eventually(200_000) { waited.withLock { !$0.isEmpty } })
        let waiting = try #require(waited.withLock { $0.first })
        #expect(waiting.redirectURI.port != nil && waiting.redirectURI.path == "/callback", "the URI listened on")
        #expect(waiting.authorizationServer == "http://127.0.0.1:\(server.port)")
        #expect(waiting.timeout == 30)
        let line = waiting.description
        #expect(line.contains("Waiting up to 30 s for the browser to return from http://127.0.0.1:\(server.port)"))
        #expect(!line.contains("state") && !line.contains("code_challenge"), "the authorization URL is not shown")
    }
}

@Suite struct SystemBrowserOpenerTests {
    @Test func browserEnvironmentVariableIsUsed() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("browser.sh")
        let output = directory.appendingPathComponent("opened.txt")
        // Written by a child process: see `ExecutableScript` (this test once failed with ETXTBSY).
        try ExecutableScript.write("#!/bin/sh\nprintf '%s' \"$1\" > '\(output.path)'\n", to: script)

        let url = URL(string: "https://auth.example.com/authorize?state=abc&client_id=x")!
        try await SystemBrowserOpener(environment: ["BROWSER": script.path]).open(url)
        #expect(try String(contentsOf: output, encoding: .utf8) == url.absoluteString)
    }

    @Test func aMissingBrowserIsATypedErrorNamingTheURL() async throws {
        let url = URL(string: "https://auth.example.com/authorize?x=1")!
        let error = await #expect(throws: CodeFlowError.self) {
            try await SystemBrowserOpener(environment: ["BROWSER": "/nonexistent/browser"]).open(url)
        }
        #expect(error?.code == .browserUnavailable)
        #expect(error?.message.contains(url.absoluteString) == true)
    }
}

@Suite struct CustomSchemeUserAgentTests {
    @Test func theAppHandsTheRedirectIn() async throws {
        let opened = Locked<[URL]>([])
        let agent = CustomSchemeUserAgent { url in opened.withLock { $0.append(url) } }
        let session = try await agent.begin(redirectURI: URL(string: "com.example.app:/oauth")!)
        let presenting = Task { try await session.present(URL(string: "https://auth.example.com/authorize?state=s")!) }
        #expect(await eventually(100_000) { opened.withLock { !$0.isEmpty } })
        #expect(agent.handleRedirect(URL(string: "com.example.other:/oauth?code=x")!) == false)
        #expect(agent.handleRedirect(URL(string: "com.example.app:/oauth?code=x&state=s")!))
        #expect(try await presenting.value.absoluteString == "com.example.app:/oauth?code=x&state=s")
        #expect(agent.handleRedirect(URL(string: "com.example.app:/oauth?code=again")!) == false, "only once")
        await session.close()
    }
}
