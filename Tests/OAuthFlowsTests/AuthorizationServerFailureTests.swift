import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 11, items 2, 4 and 7: the authorization server redirects, echoes secrets, sheds load or
/// stalls; the SDK sends no secret elsewhere, shows none, backs off, and ends in bounded time.
@Suite struct AuthorizationServerFailureTests {
    let clock = TestClock()
    let server = TokenServer()
    let api = FakeAPI(valid: ["at-2"])

    func expiredClientCredentials(client: ClientAuthentication = .none(id: "app")) -> OAuthAuthenticator {
        OAuthAuthenticator(
            flow: ClientCredentialsFlow(tokenEndpoint: tokenURL, client: client),
            token: OAuthToken(accessToken: "at-1", expiresAt: clock.now.addingTimeInterval(-1)),
            configuration: .init(clock: clock, tokenTransport: server.transport)
        )
    }

    // MARK: Redirects (item 2)

    @Test(arguments: [301, 302, 307, 308])
    func aRedirectFromTheTokenEndpointIsAnErrorNamingStatusAndOrigin(status: Int) async throws {
        server.reply(status: status, headers: ["Location": "http://evil.example.net:8080/steal"], body: Data())
        let error = await #expect(throws: HTTPTransportError.self) {
            try await TokenEndpoint(url: tokenURL, client: .clientSecretPost(id: "app", secret: "cs-secret"))
                .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
        }
        #expect(error?.code == .redirected)
        #expect(error?.statusCode == status)
        #expect(error?.redirectOrigin == "http://evil.example.net:8080")
        #expect(error?.description.contains("evil.example.net") == true)
        #expect(server.requests.count == 1)
    }

    @Test func everyEndpointFromMetadataMustBeSafeForSecrets() async throws {
        server.reply(
            json: #"{"issuer":"https://auth.example.com","token_endpoint":"http://evil.example.net/token","#
                + #""revocation_endpoint":"http://evil.example.net/revoke","device_authorization_endpoint":"http://evil.example.net/device"}"#
        )
        let context = server.context(clock: clock)
        let metadata = try await AuthorizationServerMetadata.discover(
            issuer: URL(string: "https://auth.example.com")!, context: context)
        let client = ClientAuthentication.clientSecretBasic(id: "app", secret: "cs-secret")
        let calls: [@Sendable () async throws -> Void] = [
            { _ = try await metadata.clientCredentialsFlow(client: client).obtainToken(for: context) },
            { try await metadata.revocationEndpoint(client: client).revoke("rt", context: context) },
            {
                _ = try await metadata.deviceAuthorizationFlow(client: client, onUserCode: { _ in }).obtainToken(
                    for: context)
            },
        ]
        for call in calls {
            let error = await #expect(throws: TokenEndpointError.self) { try await call() }
            #expect(error?.code == .insecureEndpoint)
        }
        #expect(server.requests.count == 1, "only the metadata was fetched")
    }

    // MARK: Echoed secrets (item 4)

    @Test func anErrorDescriptionThatEchoesTheRefreshTokenIsRedacted() async throws {
        server.reply(
            status: 400,
            json: #"{"error":"invalid_grant","error_description":"refresh token rt-SECRET-123 was revoked"}"#)
        let authenticator = OAuthAuthenticator(
            flow: RefreshTokenFlow(
                tokenEndpoint: tokenURL, clientID: "app", clientSecret: "cs-SECRET-456", refreshToken: "rt-SECRET-123"),
            token: OAuthToken(
                accessToken: "at-1", expiresAt: clock.now.addingTimeInterval(-1), refreshToken: "rt-SECRET-123"),
            configuration: .init(clock: clock, tokenTransport: server.transport)
        )
        let events = await authenticator.events()
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        let oauth = try #require(error?.underlyingError as? OAuthError)
        #expect(oauth.errorDescription == "refresh token <redacted> was revoked")
        for text in [String(describing: error), String(reflecting: error), oauth.description] {
            #expect(!text.contains("rt-SECRET-123"))
        }
        var dumped = ""
        dump(error, to: &dumped)
        #expect(!dumped.contains("rt-SECRET-123"))
        for await event in events {
            #expect(!event.description.contains("rt-SECRET-123"))
            if event.kind == .credentialCleared { break }
        }
    }

    @Test func anErrorCodeOrAddressThatEchoesASecretIsRedacted() async throws {
        // Found by the token-reply fuzz target.
        server.reply(status: 400, json: #"{"error":"cs-SECRET-456","error_uri":"https://x.example/cs-SECRET-456"}"#)
        let error = await #expect(throws: OAuthError.self) {
            try await TokenEndpoint(url: tokenURL, client: .clientSecretPost(id: "app", secret: "cs-SECRET-456"))
                .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
        }
        #expect(error?.errorURI == nil)
        #expect(error?.description.contains("cs-SECRET-456") == false)
        server.reply(status: 307, headers: ["Location": "https://cs-SECRET-456.evil.example/"], body: Data())
        let redirected = await #expect(throws: HTTPTransportError.self) {
            try await TokenEndpoint(url: tokenURL, client: .clientSecretPost(id: "app", secret: "cs-SECRET-456"))
                .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
        }
        #expect(redirected?.description.contains("cs-SECRET-456") == false)
    }

    @Test func anHTMLPageThatEchoesTheRequestIsRedacted() async throws {
        let page =
            "<html><body><p>Bad request: client_secret=cs-SECRET-456&amp;grant_type=client_credentials</p>"
            + "<pre>secret was cs-SECRET-456</pre></body></html>"
        server.reply(status: 400, headers: ["Content-Type": "text/html"], body: Data(page.utf8))
        let error = await #expect(throws: TokenEndpointError.self) {
            try await TokenEndpoint(url: tokenURL, client: .clientSecretPost(id: "app", secret: "cs-SECRET-456"))
                .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
        }
        let text = try #require(error?.description)
        #expect(!text.contains("cs-SECRET-456"))
        #expect(text.contains("Bad request"))
    }

    @Test func secretsUnderAnySpellingOfTheirNameAreRedacted() async throws {
        let body =
            #"{"note":"E1234567","accessToken":"A1234567","ACCESS_TOKEN":"B1234567","refresh-token":"C1234567","#
            + #""clientSecret":"D1234567"}"#
        server.reply(status: 500, json: body)
        let error = await #expect(throws: TokenEndpointError.self) {
            try await TokenEndpoint(url: tokenURL, client: .none(id: "app"))
                .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
        }
        let text = try #require(error?.description)
        for secret in ["A1234567", "B1234567", "C1234567", "D1234567"] { #expect(!text.contains(secret)) }
        #expect(text.contains("E1234567"), "a field that is not a secret stays")
    }

    @Test func aFormEncodedEchoAndABasicCredentialAreRedacted() async throws {
        let secret = "cs SECRET/456"
        let echo = "grant_type=client_credentials&client_secret=cs+SECRET%2F456 Authorization: Basic YXBwOmNz"
        server.reply(status: 400, headers: ["Content-Type": "text/plain"], body: Data(echo.utf8))
        let error = await #expect(throws: TokenEndpointError.self) {
            try await TokenEndpoint(url: tokenURL, client: .clientSecretBasic(id: "app", secret: secret))
                .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
        }
        let text = try #require(error?.description)
        #expect(!text.contains("SECRET"))
        #expect(!text.contains("YXBwOmNz"))
    }

    // MARK: Load shedding (item 7)

    @Test(arguments: [429, 503])
    func retryAfterIsRespectedByEveryRequestThatNeedsTheRefresh(status: Int) async throws {
        server.reply(
            status: status, headers: ["Content-Type": "application/json", "Retry-After": "30"],
            json: #"{"error":"temporarily_unavailable"}"#)
        server.reply(json: #"{"access_token":"at-2","token_type":"Bearer","expires_in":3600}"#)
        let authenticator = expiredClientCredentials()
        let first = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        let oauth = try #require(first?.underlyingError as? OAuthError)
        #expect(oauth.retryAfter == clock.now.addingTimeInterval(30))
        clock.advance(by: 29)
        for _ in 0..<5 {
            let again = await #expect(throws: AuthenticationError.self) {
                try await Me(authenticator: authenticator, transport: api.transport).request()
            }
            #expect((again?.underlyingError as? OAuthError)?.code == .temporarilyUnavailable)
        }
        #expect(server.requests.count == 1, "nothing sent while the server asked to wait")
        clock.advance(by: 2)
        #expect(try await Me(authenticator: authenticator, transport: api.transport).request().name == "Ada")
        #expect(server.requests.count == 2)
    }

    @Test func retryAfterOnAnHTMLReplyAndAsADateAndClamped() async throws {
        server.reply(
            status: 429, headers: ["Content-Type": "text/html", "Retry-After": "86400"],
            body: Data("<h1>slow</h1>".utf8))
        let error = await #expect(throws: TokenEndpointError.self) {
            try await TokenEndpoint(url: tokenURL, client: .none(id: "app"))
                .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
        }
        #expect(error?.retryAfter == clock.now.addingTimeInterval(300), "clamped to five minutes")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = formatter.string(from: clock.now.addingTimeInterval(42))
        server.reply(
            status: 503, headers: ["Content-Type": "application/json", "Retry-After": date], json: #"{"error":"x"}"#)
        let dated = await #expect(throws: OAuthError.self) {
            try await TokenEndpoint(url: tokenURL, client: .none(id: "app"))
                .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
        }
        #expect(dated?.retryAfter == clock.now.addingTimeInterval(42))
        for garbage in ["-5", "soon", "1e9", String(repeating: "9", count: 40)] {
            server.reply(
                status: 503, headers: ["Content-Type": "application/json", "Retry-After": garbage],
                json: #"{"error":"x"}"#)
            let error = await #expect(throws: OAuthError.self) {
                try await TokenEndpoint(url: tokenURL, client: .none(id: "app"))
                    .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
            }
            if let retryAfter = error?.retryAfter {
                #expect(retryAfter.timeIntervalSince(clock.now) <= 300 && retryAfter >= clock.now)
            }
        }
    }

    @Test(arguments: [429, 503])
    func aTokenEndpointSheddingLoadOverRealSocketsIsNotCalledAgainUntilRetryAfter(status: Int) async throws {
        let shedding = try await MisbehavingServer(.shed(status: status, retryAfterSeconds: 60))
        defer { Task { try await shedding.shutdown() } }
        let authenticator = OAuthAuthenticator(
            flow: ClientCredentialsFlow(
                tokenEndpoint: shedding.baseURL.appendingPathComponent("token"), client: .none(id: "app")),
            configuration: .init(tokenTransport: URLSessionTransport())
        )
        for _ in 0..<5 {
            let error = await #expect(throws: AuthenticationError.self) {
                try await Me(authenticator: authenticator, transport: api.transport).request()
            }
            #expect((error?.underlyingError as? OAuthError)?.code == .temporarilyUnavailable)
        }
        #expect(shedding.requestCount == 1, "the server asked for 60 s of quiet and got it")
        #expect(api.requestCount == 0)
    }

    // MARK: A token endpoint that stalls (item 7), over real sockets

    @Test func twentyRequestsWaitingOnADrippingTokenEndpointAllFailAtTheDeadline() async throws {
        let slow = try await MisbehavingServer(.drip(interval: 0.3, length: 100_000))
        defer { Task { try await slow.shutdown() } }
        let authenticator = OAuthAuthenticator(
            flow: ClientCredentialsFlow(
                tokenEndpoint: slow.baseURL.appendingPathComponent("token"), client: .none(id: "app")),
            configuration: .init(tokenTransport: URLSessionTransport(), authorizationServerTimeout: 1)
        )
        let started = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    let error = await #expect(throws: AuthenticationError.self) {
                        try await Me(authenticator: authenticator, transport: api.transport).request()
                    }
                    #expect(error?.code == .obtainFailed)
                    #expect((error?.underlyingError as? HTTPTransportError)?.code == .timedOut)
                }
            }
            try await group.waitForAll()
        }
        #expect(Date().timeIntervalSince(started) < 30, "not the server's pace")
        #expect(slow.requestCount == 1)
        #expect(api.requestCount == 0)
    }
}
