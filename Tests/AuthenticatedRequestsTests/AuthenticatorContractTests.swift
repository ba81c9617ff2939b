import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The behaviour contract of `AuthenticationInterceptor` (its documentation lists it), points 1 to 8, over an in-memory API and an injected clock.
@Suite struct AuthenticatorContractTests {
    let clock = TestClock()
    let flow = FakeFlow()
    let api = FakeAPI()
    let store = InMemoryTokenStore()

    func makeAuthenticator(
        token: OAuthToken? = nil,
        limit: RefreshLimit = RefreshLimit(),
        configured: Bool = true
    ) -> OAuthAuthenticator {
        let configuration = OAuthAuthenticator.Configuration(
            refreshLimit: limit,
            clock: clock,
            tokenTransport: InMemoryTransport { _ in throw URLError(.notConnectedToInternet) }
        )
        if configured {
            return OAuthAuthenticator(flow: flow, token: token, store: store, configuration: configuration)
        }
        return OAuthAuthenticator(store: store, configuration: configuration)
    }

    func token(_ number: Int, expiresIn: TimeInterval? = 3600) -> OAuthToken {
        OAuthToken(
            accessToken: "access-\(number)",
            expiresAt: expiresIn.map { clock.now.addingTimeInterval($0) },
            refreshToken: "refresh-\(number)"
        )
    }

    func storedToken() async throws -> OAuthToken? {
        try await store.load(forKey: flow.storeKey).map { try JSONDecoder().decode(OAuthToken.self, from: $0) }
    }

    // 1
    @Test func missingCredentialFailsBeforeAnythingIsSent() async throws {
        let authenticator = makeAuthenticator(configured: false)
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.code == .missingCredential)
        #expect(api.requestCount == 0)
    }

    @Test func aFlowThatCannotObtainGivesMissingCredential() async throws {
        flow.state.withLock { $0.canObtain = false }
        let authenticator = makeAuthenticator()
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.code == .missingCredential)
        #expect(api.requestCount == 0)
        #expect(flow.refreshCalls == 0)
    }

    @Test func aFirstTokenIsObtainedThroughTheFlowAndStored() async throws {
        let authenticator = makeAuthenticator()
        let profile = try await Me(authenticator: authenticator, transport: api.transport).request()
        #expect(profile.name == "Ada")
        #expect(flow.obtainCalls == 1)
        #expect(api.seenAuthorizations == ["Bearer access-1"])
        #expect(try await storedToken()?.accessToken == "access-1")
    }

    // 2
    @Test func aTokenWithinTheLeewayIsRefreshedBeforeTheRequest() async throws {
        api.accept(["access-1"])
        let authenticator = makeAuthenticator(token: token(0, expiresIn: 59))
        _ = try await Me(authenticator: authenticator, transport: api.transport).request()
        #expect(flow.refreshCalls == 1)
        #expect(flow.state.withLock { $0.refreshedFrom } == ["access-0"])
        #expect(api.seenAuthorizations == ["Bearer access-1"])
    }

    @Test func aTokenOutsideTheLeewayIsUsedAsIs() async throws {
        api.accept(["access-0"])
        let authenticator = makeAuthenticator(token: token(0, expiresIn: 61))
        _ = try await Me(authenticator: authenticator, transport: api.transport).request()
        #expect(flow.refreshCalls == 0)
        clock.advance(by: 2)
        api.accept(["access-1"])
        _ = try await Me(authenticator: authenticator, transport: api.transport).request()
        #expect(flow.refreshCalls == 1)
    }

    @Test func aTokenOfUnknownExpiryIsUsedUntilRejected() async throws {
        api.accept(["access-0"])
        let authenticator = makeAuthenticator(token: token(0, expiresIn: nil))
        clock.advance(by: 10 * 365 * 86_400)
        _ = try await Me(authenticator: authenticator, transport: api.transport).request()
        #expect(flow.refreshCalls == 0)
    }

    // 3
    @Test func aRejectedRequestIsRefreshedOnceAndRetriedOnce() async throws {
        api.accept(["access-1"])
        let authenticator = makeAuthenticator(token: token(0))
        let profile = try await Me(authenticator: authenticator, transport: api.transport).request()
        #expect(profile.name == "Ada")
        #expect(flow.refreshCalls == 1)
        #expect(api.seenAuthorizations == ["Bearer access-0", "Bearer access-1"])
    }

    @Test func aRetryThatIsRejectedAgainIsNotRetriedAgain() async throws {
        api.accept([])
        let authenticator = makeAuthenticator(token: token(0))
        let error = await #expect(throws: ResourceError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.statusCode == 401)
        #expect(api.requestCount == 2)
        #expect(flow.refreshCalls == 1)
    }

    @Test func a401ChallengingAnotherSchemeDoesNotRefresh() async throws {
        let transport = InMemoryTransport { request in
            try InMemoryTransport.reply(to: request, status: 401, headers: ["WWW-Authenticate": #"Basic realm="x""#])
        }
        let authenticator = makeAuthenticator(token: token(0))
        let error = await #expect(throws: ResourceError.self) {
            try await Me(authenticator: authenticator, transport: transport).request()
        }
        #expect(error?.statusCode == 401)
        #expect(flow.refreshCalls == 0)
    }

    @Test func aLowercaseBearerChallengeRefreshes() async throws {
        let calls = Locked(0)
        let transport = InMemoryTransport { request in
            let n = calls.withLock {
                $0 += 1; return $0
            }
            if n == 1 {
                return try InMemoryTransport.reply(
                    to: request,
                    status: 401,
                    headers: ["www-authenticate": #"bearer error="missing_authorization""#]
                )
            }
            return try InMemoryTransport.reply(to: request, json: #"{"name":"Ada"}"#)
        }
        let authenticator = makeAuthenticator(token: token(0))
        _ = try await Me(authenticator: authenticator, transport: transport).request()
        #expect(flow.refreshCalls == 1)
    }

    @Test func a403IsNotAnAuthenticationFailure() async throws {
        let transport = InMemoryTransport { try InMemoryTransport.reply(to: $0, status: 403) }
        let authenticator = makeAuthenticator(token: token(0))
        let error = await #expect(throws: ResourceError.self) {
            try await Me(authenticator: authenticator, transport: transport).request()
        }
        #expect(error?.statusCode == 403)
        #expect(flow.refreshCalls == 0)
    }

    // 4
    @Test func aRequestRejectedWithAnOlderCredentialIsRetriedWithoutRefresh() async throws {
        api.accept(["access-7"])
        let authenticator = makeAuthenticator(token: token(0))
        let gate = Gate()
        api.holdNextRequest(at: gate)
        let request = Task { try await Me(authenticator: authenticator, transport: api.transport).request() }
        #expect(await eventually { api.holdEntered })
        await authenticator.setCredential(token(7))
        await gate.open()
        let profile = try await request.value
        #expect(profile.name == "Ada")
        #expect(flow.refreshCalls == 0)
        #expect(api.seenAuthorizations == ["Bearer access-0", "Bearer access-7"])
    }

    // 5
    @Test func fiftyConcurrentRequestsShareOneRefresh() async throws {
        api.accept(["access-1"])
        let gate = Gate()
        flow.state.withLock { $0.gate = gate }
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1))
        let resource = Me(authenticator: authenticator, transport: api.transport)
        try await withThrowingTaskGroup(of: Profile.self) { group in
            for _ in 0..<50 { group.addTask { try await resource.request() } }
            #expect(await eventually { flow.refreshCalls == 1 })
            for _ in 0..<200 { await Task.yield() }
            await gate.open()
            var count = 0
            for try await profile in group {
                #expect(profile.name == "Ada")
                count += 1
            }
            #expect(count == 50)
        }
        #expect(flow.refreshCalls == 1)
        #expect(api.requestCount == 50)
        #expect(api.seenAuthorizations.allSatisfy { $0 == "Bearer access-1" })
    }

    @Test func cancellingOneWaiterDoesNotCancelTheSharedRefresh() async throws {
        api.accept(["access-1"])
        let gate = Gate()
        flow.state.withLock { $0.gate = gate }
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1))
        let resource = Me(authenticator: authenticator, transport: api.transport)
        let first = Task { try await resource.request() }
        #expect(await eventually { flow.refreshCalls == 1 })
        let others = (0..<5).map { _ in Task { try await resource.request() } }
        for _ in 0..<100 { await Task.yield() }
        first.cancel()
        await gate.open()
        await #expect(throws: CancellationError.self) { try await first.value }
        for other in others {
            #expect(try await other.value.name == "Ada")
        }
        #expect(flow.refreshCalls == 1)
        #expect(try await storedToken()?.accessToken == "access-1")
    }

    @Test func aCancelledWaiterStopsWaitingBeforeTheRefreshEnds() async throws {
        api.accept(["access-1"])
        let gate = Gate()
        flow.state.withLock { $0.gate = gate }
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1))
        let resource = Me(authenticator: authenticator, transport: api.transport)
        let first = Task { try await resource.request() }
        #expect(await eventually { flow.refreshCalls == 1 })
        let ended = Locked(false)
        let waiter = Task {
            defer { ended.withLock { $0 = true } }
            return try await resource.request()
        }
        for _ in 0..<100 { await Task.yield() }
        waiter.cancel()
        // The gate is still closed: the refresh has not returned, yet the waiter has ended.
        #expect(await eventually { ended.withLock { $0 } })
        #expect(api.seenAuthorizations.isEmpty)
        await gate.open()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(try await first.value.name == "Ada")
        #expect(flow.refreshCalls == 1)
    }

    // 6
    @Test func aFailingRefreshFailsEveryWaiterWithItsErrorAndKeepsTheCredential() async throws {
        let gate = Gate()
        flow.state.withLock {
            $0.gate = gate
            $0.failure = URLError(.timedOut)
        }
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1))
        let resource = Me(authenticator: authenticator, transport: api.transport)
        let waiters = (0..<10).map { _ in Task { try await resource.request() } }
        #expect(await eventually { flow.refreshCalls == 1 })
        for _ in 0..<100 { await Task.yield() }
        await gate.open()
        for waiter in waiters {
            let error = await #expect(throws: AuthenticationError.self) { try await waiter.value }
            #expect(error?.code == .refreshFailed)
            #expect((error?.underlyingError as? URLError)?.code == .timedOut)
        }
        #expect(flow.refreshCalls == 1)
        #expect(api.requestCount == 0)
        #expect(try await storedToken()?.accessToken == "access-0")
        #expect(try await authenticator.currentCredential()?.accessToken == "access-0")
    }

    @Test func invalidGrantOnRefreshClearsTheStoredCredential() async throws {
        flow.state.withLock {
            $0.failure = OAuthError(code: .invalidGrant, errorDescription: "revoked", statusCode: 400)
        }
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1))
        #expect(try await authenticator.currentCredential() != nil)
        #expect(try await storedToken() != nil, "a token given at creation is stored on first use")
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.code == .reauthenticationRequired)
        #expect((error?.underlyingError as? OAuthError)?.errorDescription == "revoked")
        #expect(try await storedToken() == nil)
        #expect(try await authenticator.currentCredential() == nil)
    }

    @Test func aTransportErrorOnRefreshKeepsTheStoredCredential() async throws {
        flow.state.withLock { $0.failure = URLError(.cannotConnectToHost) }
        let authenticator = makeAuthenticator(token: token(0, expiresIn: -1))
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api.transport).request()
        }
        #expect(error?.code == .refreshFailed)
        #expect(try await storedToken()?.refreshToken == "refresh-0")
    }

    // 7
    @Test func aResourceThatAlwaysAnswers401EndsWithTheExcessiveRefreshError() async throws {
        api.rejectEverything()
        let authenticator = makeAuthenticator(token: token(0), limit: RefreshLimit(maximumCount: 3, window: 60))
        let resource = Me(authenticator: authenticator, transport: api.transport)
        for attempt in 1...3 {
            let before = api.requestCount
            let error = await #expect(throws: ResourceError.self) { try await resource.request() }
            #expect(error?.statusCode == 401)
            #expect(api.requestCount - before == 2, "attempt \(attempt): one send and one retry")
            #expect(flow.refreshCalls == attempt)
        }
        let before = api.requestCount
        let error = await #expect(throws: AuthenticationError.self) { try await resource.request() }
        #expect(error?.code == .excessiveRefresh)
        #expect(flow.refreshCalls == 3)
        #expect(api.requestCount - before == 1, "the first send goes out; no refresh, no retry")
    }

    @Test func theRefreshLimitWindowSlides() async throws {
        api.rejectEverything()
        let authenticator = makeAuthenticator(token: token(0), limit: RefreshLimit(maximumCount: 1, window: 10))
        let resource = Me(authenticator: authenticator, transport: api.transport)
        await #expect(throws: ResourceError.self) { try await resource.request() }
        await #expect(throws: AuthenticationError.self) { try await resource.request() }
        clock.advance(by: 10)
        await #expect(throws: ResourceError.self) { try await resource.request() }
        #expect(flow.refreshCalls == 2)
    }

    // 8
    @Test func everyChangeOfCredentialReachesTheStore() async throws {
        let authenticator = makeAuthenticator()
        _ = try await authenticator.validCredential()
        #expect(try await storedToken()?.refreshToken == "refresh-1")
        clock.advance(by: 3600)
        _ = try await authenticator.validCredential()
        #expect(try await storedToken()?.refreshToken == "refresh-2", "a rotated refresh token is stored at once")
        await authenticator.clearCredential()
        #expect(try await storedToken() == nil)
    }

    @Test func aRestartResumesFromTheStoreWithoutANewLogin() async throws {
        api.accept(["access-1"])
        let first = makeAuthenticator()
        _ = try await Me(authenticator: first, transport: api.transport).request()
        let restarted = makeAuthenticator()
        _ = try await Me(authenticator: restarted, transport: api.transport).request()
        #expect(flow.obtainCalls == 1)
        #expect(api.seenAuthorizations == ["Bearer access-1", "Bearer access-1"])
    }

    @Test func twoClientsNeverShareAStoreEntry() async throws {
        let other = FakeFlow(storeKey: "other-client@https://auth.example.com/token")
        let configuration = OAuthAuthenticator.Configuration(clock: clock)
        let a = OAuthAuthenticator(flow: flow, store: store, configuration: configuration)
        let b = OAuthAuthenticator(flow: other, store: store, configuration: configuration)
        _ = try await a.validCredential()
        #expect(try await b.validCredential().accessToken == "access-1")
        #expect(other.obtainCalls == 1, "b obtained its own token instead of reading a's")
    }

    @Test func credentialsAreNeverSentOverPlainHTTPToARemoteHost() async throws {
        let authenticator = makeAuthenticator(token: token(0))
        api.accept(["access-0"])
        let remote = Me(
            authenticator: authenticator, transport: api.transport, url: URL(string: "http://api.example.com/me")!)
        let error = await #expect(throws: AuthenticationError.self) { try await remote.request() }
        #expect(error?.code == .insecureTransport)
        #expect(api.requestCount == 0)
        let loopback = Me(
            authenticator: authenticator, transport: api.transport, url: URL(string: "http://127.0.0.1:8080/me")!)
        #expect(try await loopback.request().name == "Ada")
    }

    @Test func eventsReportTheLifecycleWithoutSecrets() async throws {
        api.accept(["access-2"])
        let authenticator = makeAuthenticator()
        let events = await authenticator.events()
        _ = try await Me(authenticator: authenticator, transport: api.transport).request()  // obtain 1, 401, refresh 2
        await authenticator.clearCredential()
        var kinds: [AuthenticationEvent.Kind] = []
        for await event in events {
            kinds.append(event.kind)
            #expect(!event.description.contains("access-"))
            if kinds.count == 4 { break }
        }
        // `requestRetried` comes when the request is sent again, after the refresh it waited for.
        #expect(kinds == [.credentialObtained, .credentialRefreshed, .requestRetried, .credentialCleared])
    }
}
