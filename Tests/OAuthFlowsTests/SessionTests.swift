import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 12: a session comes back in one call, its state can be observed, and errors say what
/// happened. In memory, with an injected clock.
@Suite struct SessionTests {
    let clock = TestClock()
    let server = TokenServer()
    let api = FakeAPI(valid: ["at-1", "at-2"])
    let store = InMemoryTokenStore()

    var configuration: OAuthAuthenticator.Configuration { .init(clock: clock, tokenTransport: server.transport) }

    func signIn(account: String? = nil, expiresIn: TimeInterval = 3600) async throws {
        // What a browser or device sign-in leaves behind, from another process.
        let flow = AuthorizationCodeFlow(
            tokenEndpoint: tokenURL, client: .none(id: "cli"), code: "c", redirectURI: "http://127.0.0.1/cb",
            codeVerifier: nil, account: account)
        let token = OAuthToken(
            accessToken: "at-1", expiresAt: clock.now.addingTimeInterval(expiresIn), refreshToken: "rt-1",
            issuedAt: clock.now)
        let signedIn = OAuthAuthenticator(flow: flow, token: token, store: store, configuration: configuration)
        _ = try await signedIn.currentCredential()  // saved
    }

    @Test func aStoredSessionComesBackInOneCallWithoutATokenRequest() async throws {
        try await signIn()
        let authenticator = try #require(
            try await OAuthAuthenticator.restore(
                tokenEndpoint: tokenURL, client: .none(id: "cli"), store: store, configuration: configuration))
        for _ in 0..<5 { _ = try await Me(authenticator: authenticator, transport: api.transport).request() }
        #expect(server.requests.isEmpty, "0 token requests while the token is valid")
    }

    @Test func anExpiredStoredSessionIsRefreshedExactlyOnce() async throws {
        try await signIn(expiresIn: 600)
        clock.advance(by: 601)
        server.reply(json: #"{"access_token":"at-2","token_type":"Bearer","expires_in":600,"refresh_token":"rt-2"}"#)
        let authenticator = try #require(
            try await OAuthAuthenticator.restore(
                tokenEndpoint: tokenURL, client: .none(id: "cli"), store: store, configuration: configuration))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask { _ = try await Me(authenticator: authenticator, transport: api.transport).request() }
            }
            try await group.waitForAll()
        }
        #expect(server.requests.count == 1)
        #expect(server.requests.first?.form["refresh_token"] == "rt-1")
    }

    @Test func noStoredSessionIsNilAndAccountsAreKeptApart() async throws {
        #expect(
            try await OAuthAuthenticator.restore(tokenEndpoint: tokenURL, client: .none(id: "cli"), store: store) == nil
        )
        try await signIn(account: "ada@example.com")
        #expect(
            try await OAuthAuthenticator.restore(tokenEndpoint: tokenURL, client: .none(id: "cli"), store: store)
                == nil,
            "another account's session is not this one's")
        let ada = try await OAuthAuthenticator.restore(
            tokenEndpoint: tokenURL, client: .none(id: "cli"), account: "ada@example.com", store: store)
        #expect(ada != nil)
        #expect(
            TokenEndpoint(url: tokenURL, client: .none(id: "cli")).storeKey(account: "ada@example.com")
                == "cli@https://auth.example.com/token#account=ada@example.com")
    }

    @Test func aSessionWithoutStorageCannotSignInByItself() async throws {
        let authenticator = OAuthAuthenticator(store: store, configuration: configuration)
        #expect(try await authenticator.restoreSession(tokenEndpoint: tokenURL, client: .none(id: "cli")) == false)
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.code == .missingCredential)
        #expect(server.requests.isEmpty)
    }

    @Test func clientCredentialsComeBackThroughTheirFlow() async throws {
        let flow = ClientCredentialsFlow(tokenEndpoint: tokenURL, client: .clientSecretBasic(id: "svc", secret: "s"))
        server.reply(json: #"{"access_token":"at-1","token_type":"Bearer","expires_in":3600}"#)
        let first = OAuthAuthenticator(flow: flow, store: store, configuration: configuration)
        _ = try await Me(authenticator: first, transport: api.transport).request()
        let restored = try #require(
            try await OAuthAuthenticator.restore(flow: flow, store: store, configuration: configuration))
        _ = try await Me(authenticator: restored, transport: api.transport).request()
        #expect(server.requests.count == 1)
    }

    @Test func theSessionStateIsObservedWithoutPolling() async throws {
        try await signIn()
        let authenticator = try #require(
            try await OAuthAuthenticator.restore(
                tokenEndpoint: tokenURL, client: .none(id: "cli"), store: store, configuration: configuration))
        let states = await authenticator.sessionStates()
        clock.advance(by: 3601)
        server.reply(status: 400, json: #"{"error":"invalid_grant"}"#)
        await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        var seen: [SessionState] = []
        for await state in states {
            seen.append(state)
            if state == .reauthenticationRequired { break }
        }
        #expect(seen == [.signedIn, .signedOut, .reauthenticationRequired])
        #expect(
            await store.load(forKey: StoredSessionFlow(tokenEndpoint: tokenURL, client: .none(id: "cli")).storeKey)
                == nil)
    }

    @Test func twoAuthenticatorsSharingAStoreRefreshOnceAndTheSecondUsesTheFirstsResult() async throws {
        try await signIn(expiresIn: 600)
        clock.advance(by: 601)
        server.reply(json: #"{"access_token":"at-2","token_type":"Bearer","expires_in":600,"refresh_token":"rt-2"}"#)
        let one = try #require(
            try await OAuthAuthenticator.restore(
                tokenEndpoint: tokenURL, client: .none(id: "cli"), store: store, configuration: configuration))
        let two = try #require(
            try await OAuthAuthenticator.restore(
                tokenEndpoint: tokenURL, client: .none(id: "cli"), store: store, configuration: configuration))
        _ = try await Me(authenticator: one, transport: api.transport).request()
        _ = try await Me(authenticator: two, transport: api.transport).request()
        #expect(server.requests.count == 1, "the second found the first's refreshed token in the store")
        #expect(api.seenAuthorizations == ["Bearer at-2", "Bearer at-2"])
    }

    @Test func anExpiredProcessUsesTheNewerSessionAnotherProcessStored() async throws {
        try await signIn(expiresIn: 600)
        let stale = try #require(
            try await OAuthAuthenticator.restore(
                tokenEndpoint: tokenURL, client: .none(id: "cli"), store: store, configuration: configuration))
        _ = try await stale.currentCredential()
        // Another process signs in again meanwhile, with a new grant.
        let key = StoredSessionFlow(tokenEndpoint: tokenURL, client: .none(id: "cli")).storeKey
        let newer = OAuthToken(accessToken: "at-2", expiresAt: clock.now.addingTimeInterval(3600), refreshToken: "rt-9")
        clock.advance(by: 601)
        await store.save(try JSONEncoder().encode(newer), forKey: key)
        // This process's token is rejected; it picks up the newer one instead of refreshing.
        #expect(try await Me(authenticator: stale, transport: api.transport).request().name == "Ada")
        #expect(server.requests.isEmpty)
        #expect(await store.load(forKey: key) != nil)
    }

    @Test func invalidGrantClearsTheEntryOnlyIfItStillHoldsTheRejectedCredential() async throws {
        try await signIn(expiresIn: 600)
        clock.advance(by: 601)
        let key = StoredSessionFlow(tokenEndpoint: tokenURL, client: .none(id: "cli")).storeKey
        let newer = OAuthToken(accessToken: "at-2", expiresAt: clock.now.addingTimeInterval(3600), refreshToken: "rt-9")
        // While this refresh is at the server, someone writes a newer session without the lock;
        // then the server rejects the old refresh token.
        let transport = InMemoryTransport { [store] request in
            await store.save(try JSONEncoder().encode(newer), forKey: key)
            return try InMemoryTransport.reply(to: request, status: 400, json: #"{"error":"invalid_grant"}"#)
        }
        let authenticator = try #require(
            try await OAuthAuthenticator.restore(
                tokenEndpoint: tokenURL, client: .none(id: "cli"), store: store,
                configuration: .init(clock: clock, tokenTransport: transport)))
        #expect(try await Me(authenticator: authenticator, transport: api.transport).request().name == "Ada")
        let stored = try #require(await store.load(forKey: key))
        #expect(
            try JSONDecoder().decode(OAuthToken.self, from: stored).refreshToken == "rt-9", "the newer session stays")
    }

    // MARK: Errors that say what happened

    @Test func aFailedFirstTokenRequestIsNotAFailedRefresh() async throws {
        server.reply(status: 401, json: #"{"error":"invalid_client"}"#)
        let authenticator = OAuthAuthenticator(
            flow: ClientCredentialsFlow(tokenEndpoint: tokenURL, client: .clientSecretBasic(id: "svc", secret: "bad")),
            configuration: configuration)
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.code == .obtainFailed)
        #expect((error?.underlyingError as? OAuthError)?.code == .invalidClient)
        #expect(error?.description.contains("refresh") == false)
    }

    @Test func afterASignOutARequestSaysSoNotThatTheCodeWasUsed() async throws {
        server.reply(json: #"{"access_token":"at-1","token_type":"Bearer","expires_in":600,"refresh_token":"rt-1"}"#)
        let flow = AuthorizationCodeFlow(
            tokenEndpoint: tokenURL, client: .none(id: "cli"), code: "c", redirectURI: "http://127.0.0.1/cb",
            codeVerifier: nil)
        let authenticator = OAuthAuthenticator(flow: flow, store: store, configuration: configuration)
        _ = try await Me(authenticator: authenticator, transport: api.transport).request()
        await authenticator.clearCredential()
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.code == .missingCredential)
        #expect(error?.message.contains("Signed out") == true)
    }

    // MARK: Server quirks and introspection

    @Test func clientIDInTheBodyWithBasicIsOneDocumentedSwitch() async throws {
        server.reply(json: #"{"access_token":"at","token_type":"Bearer"}"#)
        let client = ClientAuthentication.clientSecretBasic(id: "tv", secret: "s").with(
            .clientIDInBodyWithBasicAuthentication)
        _ = try await TokenEndpoint(url: tokenURL, client: client)
            .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
        let sent = try #require(server.requests.first)
        #expect(sent.header("Authorization")?.hasPrefix("Basic ") == true)
        #expect(sent.form["client_id"] == "tv")
        #expect(sent.form["client_secret"] == nil, "still one authentication method")
        server.reply(json: #"{"access_token":"at","token_type":"Bearer"}"#)
        _ = try await TokenEndpoint(url: tokenURL, client: .clientSecretBasic(id: "tv", secret: "s"))
            .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
        #expect(server.requests.last?.form["client_id"] == nil, "off by default")
    }

    @Test func introspectionReadsEveryFieldAndChecksItsDates() async throws {
        server.reply(
            json: #"{"active":true,"scope":"read write","client_id":"app","username":"ada","token_type":"Bearer","#
                + #""exp":1800003600,"iat":1800000000,"nbf":1800000000,"sub":"1","aud":"api","iss":"https://a","jti":"j","x":1}"#
        )
        let endpoint = IntrospectionEndpoint(url: tokenURL, client: .clientSecretBasic(id: "api", secret: "s"))
        let info = try await endpoint.introspect("at-secret", hint: .accessToken, context: server.context(clock: clock))
        #expect(info.isActive)
        #expect(info.scopes == ["read", "write"])
        #expect(info.expiresAt == Date(timeIntervalSince1970: 1_800_003_600))
        #expect(info.audience == ["api"])
        #expect(info.additionalFields["x"] == .number(1))
        #expect(server.requests.first?.form == ["token": "at-secret", "token_type_hint": "access_token"])

        server.reply(json: #"{"active":false}"#)
        #expect(try await endpoint.introspect("t", context: server.context(clock: clock)).isActive == false)
        for bad in [#"{"active":true,"exp":1e300}"#, #"{"active":true,"exp":"soon"}"#, #"{"active":"yes"}"#, #"{}"#] {
            server.reply(json: bad)
            await #expect(throws: TokenEndpointError.self) {
                try await endpoint.introspect("t", context: server.context(clock: clock))
            }
        }
    }
}
