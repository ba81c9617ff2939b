#if MCP
    import AuthenticatedRequests
    import CodeFlowOAuth
    import Foundation
    import MCP
    import MCPAuthentication
    import ResourceDiscovery
    import TestSupport
    import Testing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The same expired session through the MCP Swift SDK's own `OAuthAuthorizer` (0.12.1) and
    /// through ``MCPAuthorizer``, in one test run, against the scenario server's `expired-session`:
    /// access tokens that live 36 s, and a server that does not rotate refresh tokens (RFC 6749 §6
    /// lets it keep the one it issued). Each client continues a signed-in session across two
    /// expiries of its access token.
    ///
    /// The SDK's authorizer resumes a session signed in earlier (its `TokenStorage` holds the
    /// client id, an expired access token and the refresh token; its browser sign-in cannot run on
    /// Linux, where its PKCE needs CryptoKit); it checks expiry with a 30 s margin against the
    /// system clock, so each new token counts as expired 6 s after issue. Ours signs in through
    /// the browser and runs on an injected clock moved past each expiry.
    ///
    /// What differs is how each continues: the SDK's authorizer stores its first refresh's reply
    /// as it is, without the refresh token the server kept, so at the next expiry it starts the
    /// browser sign-in again although the server still honours that refresh token; ours keeps the
    /// refresh token and refreshes once per expiry, with no browser after the first sign-in.
    @Suite(.enabled(if: ConformanceScenarioServer.isConfigured, ConformanceScenarioServer.notRunReason))
    struct MCPSideBySideTests {
        struct EarlierSession: Decodable {
            let client_id: String
            let access_token: String
            let refresh_token: String
            let token_endpoint: String
        }

        /// Whether the server still exchanges `refreshToken` at `endpoint`.
        func stillRefreshes(_ refreshToken: String, at endpoint: String) async throws -> Bool {
            var request = URLRequest(url: mappedToLoopbackHTTP(try #require(URL(string: endpoint))))
            request.httpMethod = "POST"
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data("grant_type=refresh_token&refresh_token=\(refreshToken)".utf8)
            let (_, response) = try await URLSessionTransport.shared.send(request)
            return response.statusCode == 200
        }

        @Test func anExpiredSessionAtAServerThatDoesNotRotateRefreshTokens() async throws {
            // The MCP Swift SDK's OAuthAuthorizer, resuming a stored session.
            let theirs = try await ConformanceScenarioServer.start("expired-session")
            let earlier = try await ConformanceScenarioServer.earlierSession(of: theirs, as: EarlierSession.self)
            let storage = InMemoryTokenStorage()
            storage.save(
                OAuthAccessToken(
                    value: earlier.access_token, tokenType: "Bearer", expiresAt: Date(timeIntervalSinceNow: -60),
                    scopes: [], authorizationServer: nil, refreshToken: earlier.refresh_token,
                    clientID: earlier.client_id))
            let browser = AuthorizationPageFollower()
            let configuration = URLSessionConfiguration.ephemeral
            configuration.protocolClasses = [LoopbackHTTPSMapping.self]
            let sdkAuthorizer = OAuthAuthorizer(
                configuration: OAuthConfiguration(
                    grantType: .authorizationCode, authentication: .none(clientID: earlier.client_id),
                    authorizationDelegate: browser),
                tokenStorage: storage)
            let sdkClient = MCP.Client(name: "side-by-side", version: "1.0")
            _ = try await sdkClient.connect(
                transport: HTTPClientTransport(
                    endpoint: theirs.server, configuration: configuration, streaming: false, authorizer: sdkAuthorizer))
            _ = try await sdkClient.listTools()  // after the first refresh
            let refreshesBefore = try await ConformanceScenarioServer.checks(of: theirs).count {
                $0.id == "refresh-request"
            }
            try await Task.sleep(for: .seconds(7))  // past expiry by the SDK's 30 s margin
            var failure: (any Error)?
            do { _ = try await sdkClient.callTool(name: "test-tool", arguments: [:]) } catch { failure = error }
            // The browser sign-in again: the delegate was asked (Apple platforms), or the flow
            // stopped at its PKCE before asking (Linux).
            let signedInAgain =
                browser.presented.withLock { $0 } == 1
                || String(describing: failure.map { "\($0)" } ?? "").contains("Authorization flow failed")
            #expect(signedInAgain, "the SDK's authorizer went back to the browser: \(String(describing: failure))")
            await sdkClient.disconnect()
            let theirChecks = try await ConformanceScenarioServer.checks(of: theirs)
            #expect(refreshesBefore == 1, "the first expiry: one refresh")
            #expect(theirChecks.count { $0.id == "refresh-request" } == 1, "the second expiry: no refresh")
            #expect(storage.load()?.refreshToken == nil, "the refresh token is gone from the SDK's storage")
            #expect(
                try await stillRefreshes(earlier.refresh_token, at: earlier.token_endpoint),
                "yet the server still honours it")

            // MCPAuthorizer, from a browser sign-in, on an injected clock.
            let ours = try await ConformanceScenarioServer.start("expired-session")
            let clock = TestClock()
            let opener = MappedBrowser()
            let signIn = ResourceSignIn(
                resource: ours.server, registration: .dynamic(clientName: "side-by-side"),
                method: .browser(LoopbackUserAgent(opener: opener, timeout: 30)), store: InMemoryTokenStore(),
                configuration: OAuthAuthenticator.Configuration(clock: clock, tokenTransport: LoopbackHTTPSTransport()))
            let authorizer = MCPAuthorizer(signIn: signIn)
            let client = MCP.Client(name: "side-by-side", version: "1.0")
            _ = try await client.connect(
                transport: HTTPClientTransport(
                    endpoint: ours.server, streaming: false, authorizer: MCPTransportAuthorizer(authorizer),
                    requestModifier: authorizer.modify)
            )
            _ = try await client.listTools()
            for _ in 0..<2 {
                clock.advance(by: 40)  // past expiry
                _ = try await client.callTool(name: "test-tool", arguments: [:])
            }
            await client.disconnect()
            let ourChecks = try await ConformanceScenarioServer.checks(of: ours)
            #expect(opener.opened.withLock { $0 } == 1, "MCPAuthorizer signed in once")
            #expect(ourChecks.count { $0.id == "authorization-request" } == 1)
            #expect(ourChecks.count { $0.id == "refresh-request" } == 2, "one refresh per expiry")
            #expect(!ourChecks.contains { $0.status == "FAILURE" })
        }
    }

    /// `https://127.0.0.1:PORT/…` as `http://127.0.0.1:PORT/…`: the scenario server advertises its
    /// authorization server over https (the SDK's authorizer refuses http even on loopback) and
    /// serves plain http on the same loopback port.
    func mappedToLoopbackHTTP(_ url: URL) -> URL {
        guard url.scheme == "https", url.host == "127.0.0.1",
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return url }
        components.scheme = "http"
        return components.url ?? url
    }

    /// The URL mapping for the SDK's `URLSession`: answers https requests to 127.0.0.1 from the
    /// same port over http.
    final class LoopbackHTTPSMapping: URLProtocol {
        /// This protocol instance, handed to the completion handler: URLSession calls one
        /// instance from its own queue, start then stop, and the handler runs once.
        struct Handle: @unchecked Sendable { let loader: LoopbackHTTPSMapping }

        override class func canInit(with request: URLRequest) -> Bool {
            request.url.map { mappedToLoopbackHTTP($0) != $0 } ?? false
        }

        override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

        override func startLoading() {
            var outgoing = request
            outgoing.url = request.url.map(mappedToLoopbackHTTP)
            let mapped = outgoing
            let handle = Handle(loader: self)
            // Off URLSession's own queue: a task of another session started on it deadlocks
            // (swift-corelibs-foundation's sessions share their work queue's target).
            DispatchQueue.global().async {
                URLSession.shared.dataTask(with: mapped) { data, response, error in
                    DispatchQueue.global().async { handle.deliver(data, response, error) }
                }.resume()
            }
        }

        override func stopLoading() {}
    }

    extension LoopbackHTTPSMapping.Handle {
        func deliver(_ data: Data?, _ response: URLResponse?, _ error: (any Error)?) {
            let loader = self.loader
            if let response {
                loader.client?.urlProtocol(loader, didReceive: response, cacheStoragePolicy: .notAllowed)
                loader.client?.urlProtocol(loader, didLoad: data ?? Data())
                loader.client?.urlProtocolDidFinishLoading(loader)
            } else {
                loader.client?.urlProtocol(loader, didFailWithError: error ?? URLError(.badServerResponse))
            }
        }
    }

    /// The same mapping for this package's engine.
    struct LoopbackHTTPSTransport: HTTPTransport {
        func send(_ request: URLRequest) async throws -> (Data, ResponseHead) {
            try await URLSessionTransport.shared.send(mapped(request))
        }

        func send(_ request: URLRequest, options: HTTPTransportOptions) async throws -> (Data, ResponseHead) {
            try await URLSessionTransport.shared.send(mapped(request), options: options)
        }

        private func mapped(_ request: URLRequest) -> URLRequest {
            var mapped = request
            mapped.url = request.url.map(mappedToLoopbackHTTP)
            return mapped
        }
    }

    /// The user who clicks "Allow" for ``MCPAuthorizer``: opens the mapped URL and follows its
    /// redirect to the loopback receiver.
    struct MappedBrowser: BrowserOpener {
        let opened = Locked(0)

        func open(_ url: URL) async throws {
            opened.withLock { $0 += 1 }
            _ = try await URLSession.shared.data(from: mappedToLoopbackHTTP(url))
        }
    }

    /// The user who clicks "Allow" for the SDK's authorizer (its `OAuthAuthorizationDelegate`):
    /// opens the authorization URL and returns where the server redirects, the redirect URI with
    /// the code.
    struct AuthorizationPageFollower: OAuthAuthorizationDelegate {
        let presented = Locked(0)

        func presentAuthorizationURL(_ url: URL) async throws -> URL {
            presented.withLock { $0 += 1 }
            let (_, response) = try await URLSessionTransport.shared.send(
                URLRequest(url: mappedToLoopbackHTTP(url)), options: HTTPTransportOptions(followsRedirects: false))
            let location = response.value(forHTTPHeaderField: "Location")
            return try #require(location.flatMap(URL.init(string:)), "the authorization endpoint redirects")
        }
    }
#endif
