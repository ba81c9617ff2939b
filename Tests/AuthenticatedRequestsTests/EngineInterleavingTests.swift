import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 11, item 5: the engine keeps its promises when events interleave. The scenarios follow
/// Alamofire 5.12's `AuthenticationInterceptor` tests; where this engine deliberately differs
/// (one retry per request, never more; refreshes the server did not answer are not counted), the
/// test says so.
@Suite struct EngineInterleavingTests {
    let clock = TestClock()
    let flow = FakeFlow()
    let api = FakeAPI()
    let store = InMemoryTokenStore()

    func makeAuthenticator(token: OAuthToken?, limit: RefreshLimit = RefreshLimit()) -> OAuthAuthenticator {
        OAuthAuthenticator(
            flow: flow,
            token: token,
            store: store,
            configuration: .init(
                refreshLimit: limit,
                clock: clock,
                tokenTransport: InMemoryTransport { _ in throw URLError(.notConnectedToInternet) }
            )
        )
    }

    func token(_ number: Int, expiresIn: TimeInterval = 3600, issued: Bool = false) -> OAuthToken {
        OAuthToken(
            accessToken: "access-\(number)",
            expiresAt: clock.now.addingTimeInterval(expiresIn),
            refreshToken: "refresh-\(number)",
            issuedAt: issued ? clock.now : nil
        )
    }

    func storedAccessToken() async throws -> String? {
        try await store.load(forKey: flow.storeKey).map { try JSONDecoder().decode(OAuthToken.self, from: $0) }?
            .accessToken
    }

    func requests(_ count: Int, _ authenticator: OAuthAuthenticator) -> [Task<Profile, any Error>] {
        (0..<count).map { _ in Task { try await Me(authenticator: authenticator, transport: api.transport).request() } }
    }

    // MARK: A sign-out or a new credential while a refresh is in flight

    @Test func aSignOutDuringARefreshFailsItsWaitersAndNothingIsSentWithItsResult() async throws {
        api.accept(["access-1"])
        let gate = Gate()
        flow.state.withLock { $0.gate = gate }
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1))
        let waiting = requests(3, authenticator)
        #expect(await eventually { flow.refreshCalls == 1 })
        await authenticator.clearCredential()
        await gate.open()
        for request in waiting {
            let error = await #expect(throws: AuthenticationError.self) { try await request.value }
            #expect(error?.code == .missingCredential)
        }
        #expect(api.requestCount == 0, "the refreshed token, stored nowhere, was never sent")
        #expect(try await storedAccessToken() == nil)
        #expect(try await authenticator.currentCredential() == nil)
    }

    @Test func aCredentialSetDuringARefreshIsWhatItsWaitersUse() async throws {
        api.accept(["access-9"])
        let gate = Gate()
        flow.state.withLock { $0.gate = gate }
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1))
        let waiting = requests(3, authenticator)
        #expect(await eventually { flow.refreshCalls == 1 })
        await authenticator.setCredential(token(9))
        await gate.open()
        for request in waiting { #expect(try await request.value.name == "Ada") }
        #expect(Set(api.seenAuthorizations) == ["Bearer access-9"])
        #expect(try await storedAccessToken() == "access-9")
    }

    // MARK: The refresh limit counts what the server answered (Alamofire #3694)

    @Test func refreshesThatNeverReachedTheServerDoNotUseUpTheLimit() async throws {
        api.accept(["access-9"])  // the fake flow numbers failed attempts too
        flow.state.withLock { $0.failure = URLError(.notConnectedToInternet) }
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1), limit: RefreshLimit(maximumCount: 5))
        for _ in 0..<8 {
            let error = await #expect(throws: AuthenticationError.self) {
                try await Me(authenticator: authenticator, transport: api.transport).request()
            }
            #expect(error?.code == .refreshFailed, "offline, never excessiveRefresh")
        }
        flow.state.withLock { $0.failure = nil }  // the network is back
        #expect(try await Me(authenticator: authenticator, transport: api.transport).request().name == "Ada")
        #expect(flow.refreshCalls == 9)
    }

    @Test func refreshesTheServerAnsweredAreLimited() async throws {
        flow.state.withLock { $0.failure = OAuthError(code: .serverError, statusCode: 500) }
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1), limit: RefreshLimit(maximumCount: 3))
        for _ in 0..<3 {
            await #expect(throws: AuthenticationError.self) {
                try await Me(authenticator: authenticator, transport: api.transport).request()
            }
        }
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.code == .excessiveRefresh)
        #expect(flow.refreshCalls == 3, "the fourth was not sent")
    }

    @Test func obtainingTheFirstCredentialIsNotARefreshAndANewCredentialStartsAFreshBudget() async throws {
        flow.state.withLock { $0.lifetime = 3600 }
        api.accept(["access-1"])
        let authenticator = makeAuthenticator(token: nil, limit: RefreshLimit(maximumCount: 1))
        #expect(try await Me(authenticator: authenticator, transport: api.transport).request().name == "Ada")
        #expect(flow.obtainCalls == 1)
        // The one refresh allowed is still there:
        api.accept(["access-2"])
        #expect(try await Me(authenticator: authenticator, transport: api.transport).request().name == "Ada")
        #expect(flow.refreshCalls == 1)
        // Exhausted now; a credential set from outside starts afresh.
        api.accept(["access-3"])
        await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(flow.refreshCalls == 1)
        await authenticator.setCredential(token(7))
        api.accept(["access-3"])
        #expect(try await Me(authenticator: authenticator, transport: api.transport).request().name == "Ada")
        #expect(flow.refreshCalls == 2)
    }

    // MARK: A late 401 after the refresh from its credential failed (Alamofire #3290)

    @Test(arguments: [true, false])
    func aLateRejectionDoesNotRefreshAgainFromACredentialThatFailed(deadGrant: Bool) async throws {
        api.accept([])
        flow.state.withLock {
            $0.failure = deadGrant ? OAuthError(code: .invalidGrant) : URLError(.timedOut)
        }
        let authenticator = makeAuthenticator(token: token(0))
        let gate = Gate()
        api.holdNextRequest(at: gate)
        let late = Task { try await Me(authenticator: authenticator, transport: api.transport).request() }
        #expect(await eventually { api.holdEntered })
        let first = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(first?.code == (deadGrant ? .reauthenticationRequired : .refreshFailed))
        await gate.open()  // the held request's 401 arrives now
        let second = await #expect(throws: AuthenticationError.self) { try await late.value }
        #expect(second?.code == first?.code)
        #expect(flow.refreshCalls == 1, "one refresh from access-0, not two")
    }

    // MARK: A refreshed credential that still needs a refresh is never sent

    @Test func aServerThatIssuesExpiredTokensCostsOneRefreshAndNothingIsSent() async throws {
        flow.state.withLock { $0.lifetime = 0 }
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1), limit: RefreshLimit(maximumCount: 5))
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.code == .expiredInFlight)
        #expect(flow.refreshCalls == 1, "a typed error, not a loop of refreshes up to the limit")
        #expect(api.requestCount == 0)
    }

    @Test func aRefreshedTokenWithinTheConfiguredLeewayButNotAQuarterOfItsLifeIsSent() async throws {
        // A short lifetime: the new token lives 30 s, less than the 60 s leeway; its own leeway
        // is a quarter of that, so it is good to send. Refreshing again would only loop.
        flow.state.withLock {
            $0.lifetime = 30
            $0.stampsIssuedAt = true
        }
        api.accept(["access-1"])
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1))
        #expect(try await Me(authenticator: authenticator, transport: api.transport).request().name == "Ada")
        #expect(flow.refreshCalls == 1)
    }

    // MARK: isRequest(_:authenticatedWith:) is asked of the credential a retry would use

    @Test func aRefreshThatReturnsTheRejectedAccessTokenWithANewExpiryIsNeverSentAgain() async throws {
        // The server rejects access-0; every refresh hands back access-0 with a later expiry.
        let flow = ScriptedFlow(tokens: Array(repeating: "access-0", count: 20), lifetime: 3600)
        api.accept(["access-1"])
        let authenticator = OAuthAuthenticator(
            flow: flow, token: OAuthToken(accessToken: "access-0", expiresAt: clock.now + 600),
            configuration: .init(refreshLimit: RefreshLimit(maximumCount: 3, window: 30), clock: clock))
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.code == .excessiveRefresh)
        #expect(api.seenAuthorizations == ["Bearer access-0"], "the rejected token is sent once, never retried")
        #expect(flow.calls == 3, "refreshed again within the limit, then excessiveRefresh")
    }

    @Test func aRefreshThatReturnsTheRejectedTokenThenANewOneRetriesWithTheNewOne() async throws {
        let flow = ScriptedFlow(tokens: ["access-0", "access-1"], lifetime: 3600)
        api.accept(["access-1"])
        let authenticator = OAuthAuthenticator(
            flow: flow, token: OAuthToken(accessToken: "access-0"),
            configuration: .init(clock: clock))
        #expect(try await Me(authenticator: authenticator, transport: api.transport).request().name == "Ada")
        #expect(api.seenAuthorizations == ["Bearer access-0", "Bearer access-1"])
        #expect(flow.calls == 2, "the refresh that returned the rejected token was followed by another")
    }

    /// A scheme of the application's own: a session key in a header, refreshed by a closure.
    struct SessionKey: AuthenticationCredential {
        let key: String
        let expiresAt: Date
        func requiresRefresh(at date: Date) -> Bool { expiresAt <= date }
    }

    final class SessionKeyAuthenticator: Authenticator {
        let keys: Locked<[String]>
        let calls = Locked(0)
        let clock: TestClock
        init(keys: [String], clock: TestClock) {
            self.keys = Locked(keys)
            self.clock = clock
        }
        func apply(_ credential: SessionKey, to urlRequest: inout URLRequest) {
            urlRequest.setValue(credential.key, forHTTPHeaderField: "X-Session-Key")
        }
        func refresh(_ credential: SessionKey, for context: AuthenticationContext) async throws -> SessionKey {
            calls.withLock { $0 += 1 }
            let key = keys.withLock { $0.isEmpty ? credential.key : $0.removeFirst() }
            return SessionKey(key: key, expiresAt: clock.now + 3600 + Double(calls.withLock { $0 }))
        }
    }

    /// Alamofire's scenario N5 for a credential that is not an `OAuthToken`: a refresh that hands
    /// back the rejected key with only another expiry has not renewed it; it is never sent again.
    @Test func aCustomCredentialRefreshedToTheRejectedKeyWithANewExpiryIsNeverSentAgain() async throws {
        let seen = Locked<[String]>([])
        let transport = InMemoryTransport { request in
            let key = request.value(forHTTPHeaderField: "X-Session-Key") ?? ""
            seen.withLock { $0.append(key) }
            return try InMemoryTransport.reply(
                to: request, status: key == "key-1" ? 200 : 401, json: #"{"name":"Ada","email":"ada@example.com"}"#)
        }
        // Every refresh returns key-0 with a later expiry: refreshed within the limit, never resent.
        let stubborn = SessionKeyAuthenticator(keys: Array(repeating: "key-0", count: 10), clock: clock)
        let interceptor = AuthenticationInterceptor(
            authenticator: stubborn, credential: SessionKey(key: "key-0", expiresAt: clock.now + 600),
            configuration: .init(refreshLimit: RefreshLimit(maximumCount: 3, window: 30), clock: clock))
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: interceptor, transport: transport).request()
        }
        #expect(error?.code == .excessiveRefresh)
        #expect(seen.withLock { $0 } == ["key-0"], "the rejected key is sent once, never retried")
        #expect(stubborn.calls.withLock { $0 } == 3)
        // A refresh that returns the rejected key, then a new one: the retry carries the new one.
        seen.withLock { $0.removeAll() }
        let recovering = SessionKeyAuthenticator(keys: ["key-0", "key-1"], clock: clock)
        let second = AuthenticationInterceptor(
            authenticator: recovering, credential: SessionKey(key: "key-0", expiresAt: clock.now + 600),
            configuration: .init(clock: clock))
        #expect(try await Me(authenticator: second, transport: transport).request().name == "Ada")
        #expect(seen.withLock { $0 } == ["key-0", "key-1"])
        #expect(recovering.calls.withLock { $0 } == 2)
    }

    // MARK: More of Alamofire's scenarios

    @Test func aCredentialClearedWhileTheRequestWasOnItsWayGivesMissingCredentialOnTheRetry() async throws {
        api.accept([])
        let authenticator = makeAuthenticator(token: token(0))
        let gate = Gate()
        api.holdNextRequest(at: gate)
        let request = Task { try await Me(authenticator: authenticator, transport: api.transport).request() }
        #expect(await eventually { api.holdEntered })
        await authenticator.clearCredential()
        await gate.open()
        let error = await #expect(throws: AuthenticationError.self) { try await request.value }
        #expect(error?.code == .missingCredential)
        #expect(flow.refreshCalls == 0)
        #expect(api.requestCount == 1)
    }

    @Test func parallelRejectionsOfTheSameCredentialShareOneRefresh() async throws {
        api.accept(["access-1"])
        let gate = Gate()
        api.holdNextRequest(at: gate)
        let authenticator = makeAuthenticator(token: token(0))
        let held = Task { try await Me(authenticator: authenticator, transport: api.transport).request() }
        #expect(await eventually { api.holdEntered })
        let others = requests(5, authenticator)
        for request in others { #expect(try await request.value.name == "Ada") }
        await gate.open()
        #expect(try await held.value.name == "Ada")
        #expect(flow.refreshCalls == 1)
        #expect(api.seenAuthorizations.filter { $0 == "Bearer access-1" }.count == 6, "each retried once with access-1")
    }

    /// Alamofire retries as often as its retrier allows, up to the refresh window; this engine
    /// retries a rejected request exactly once (`aRetryThatIsRejectedAgainIsNotRetriedAgain` in
    /// the contract tests), so a server that rejects every credential costs one refresh per
    /// request, and the refresh limit stops the rest.
    @Test func aServerThatRejectsEveryCredentialGetsOneRetryPerRequestThenTheLimit() async throws {
        api.rejectEverything()
        let authenticator = makeAuthenticator(token: token(0), limit: RefreshLimit(maximumCount: 2))
        for _ in 0..<2 {
            let error = await #expect(throws: ResourceError.self) {
                try await Me(authenticator: authenticator, transport: api.transport).request()
            }
            #expect(error?.statusCode == 401, "one retry, then the 401 comes back")
        }
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.code == .excessiveRefresh)
        #expect(flow.refreshCalls == 2)
        #expect(api.requestCount == 5, "2 × (request + retry) + the third request")
    }

    // MARK: Events

    @Test func requestRetriedIsEmittedOnlyWhenTheRequestIsSentAgain() async throws {
        api.accept([])
        flow.state.withLock { $0.failure = URLError(.notConnectedToInternet) }
        let authenticator = makeAuthenticator(token: token(0))
        let events = await authenticator.events()
        await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        await authenticator.clearCredential()
        var kinds: [AuthenticationEvent.Kind] = []
        for await event in events {
            kinds.append(event.kind)
            if event.kind == .credentialCleared { break }
        }
        #expect(kinds == [.refreshFailed, .credentialCleared])
    }

    // MARK: The leeway fits the token (issue 12, item 3)

    @Test func tokensThatLiveEightSecondsAreNotRefreshedOnEveryRequest() async throws {
        api.accept(["access-0", "access-1"])
        let authenticator = makeAuthenticator(token: token(0, expiresIn: 8, issued: true))
        for _ in 0..<20 {
            _ = try await Me(authenticator: authenticator, transport: api.transport).request()
            clock.advance(by: 0.15)
        }
        #expect(flow.refreshCalls == 0, "20 requests over 3 s, default 60 s leeway")
        clock.advance(by: 5)  // 8 s: expired
        _ = try await Me(authenticator: authenticator, transport: api.transport).request()
        #expect(flow.refreshCalls == 1)
    }

    @Test func theLeewayIsAQuarterOfTheLifetimeAtMost() {
        let token = token(0, expiresIn: 8, issued: true)
        #expect(token.effectiveLeeway(60) == 2)
        #expect(!token.requiresRefresh(now: clock.now.addingTimeInterval(5.9), leeway: 60))
        #expect(token.requiresRefresh(now: clock.now.addingTimeInterval(6), leeway: 60))
        let long = self.token(1, expiresIn: 3600, issued: true)
        #expect(long.effectiveLeeway(60) == 60)
        #expect(self.token(2, expiresIn: 8).effectiveLeeway(60) == 60, "without issuedAt the leeway is as given")
    }
}

/// A flow that hands out the given access tokens in order, whatever it is asked.
private final class ScriptedFlow: OAuthFlow {
    let storeKey = "scripted@https://auth.example.com/token"
    private let script: Locked<(tokens: [String], calls: Int)>

    private let lifetime: TimeInterval?

    init(tokens: [String], lifetime: TimeInterval? = nil) {
        script = Locked((tokens, 0))
        self.lifetime = lifetime
    }

    var calls: Int { script.withLock { $0.calls } }

    func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken { try next() }
    func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken { try next() }

    private func next() throws -> OAuthToken {
        let (access, call) = script.withLock { script -> (String?, Int) in
            script.calls += 1
            return (script.tokens.isEmpty ? nil : script.tokens.removeFirst(), script.calls)
        }
        guard let access else { throw URLError(.badServerResponse) }
        // With a lifetime, each token expires a second later than the one before: only the expiry changes.
        let expiry = lifetime.map { TestClock().now + $0 + TimeInterval(call) }
        return OAuthToken(accessToken: access, expiresAt: expiry)
    }
}

/// Issue 14: one transport setting serves everything of one client.
@Suite struct OneTransportTests {
    struct MeWithoutTransport: AuthenticatedResource {
        typealias Output = Profile
        let authenticator: any RequestAuthenticator
        func urlRequest(using input: Void) throws -> URLRequest {
            URLRequest(url: URL(string: "https://api.example.com/me")!)
        }
    }

    @Test func aResourceWithoutATransportUsesTheAuthenticators() async throws {
        let api = FakeAPI(valid: ["access-0"])
        let authenticator = OAuthAuthenticator(
            flow: FakeFlow(), token: OAuthToken(accessToken: "access-0"),
            configuration: .init(tokenTransport: api.transport))
        #expect(try await MeWithoutTransport(authenticator: authenticator).request().name == "Ada")
        #expect(api.requestCount == 1)
        #expect(authenticator.context.transport is InMemoryTransport)
    }
}

/// Issue 14: bridges that send requests themselves use the same engine.
@Suite struct BridgeTests {
    @Test func authenticateThenReauthenticateAfterARejectionRefreshesOnce() async throws {
        let flow = FakeFlow()
        let authenticator = OAuthAuthenticator(
            flow: flow, token: OAuthToken(accessToken: "access-0", refreshToken: "r"))
        var request = URLRequest(url: URL(string: "https://api.example.com/me")!)
        try await authenticator.authenticate(&request)
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer access-0")
        let rejected = request
        let retries = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    try await authenticator.reauthenticate(afterRejectionOf: rejected)
                        .value(forHTTPHeaderField: "Authorization")
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(retries) == ["Bearer access-1"])
        #expect(flow.refreshCalls == 1, "ten rejections of one credential share one refresh")
    }

    @Test func plainHTTPToARemoteHostIsRefusedHereToo() async throws {
        let authenticator = OAuthAuthenticator(flow: FakeFlow(), token: OAuthToken(accessToken: "access-0"))
        var request = URLRequest(url: URL(string: "http://api.example.com/me")!)
        let error = await #expect(throws: AuthenticationError.self) { try await authenticator.authenticate(&request) }
        #expect(error?.code == .insecureTransport)
    }
}
