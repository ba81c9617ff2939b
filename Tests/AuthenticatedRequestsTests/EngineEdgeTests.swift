import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The engine's contract at its edges: what a custom authenticator is shown, how many refreshes
/// one rejection may cost, what a request does with a credential that expired on its way, and
/// which secrets every error built from an authenticated response leaves out.
@Suite struct EngineEdgeTests {
    let clock = TestClock()
    let flow = FakeFlow()
    let store = InMemoryTokenStore()

    func makeAuthenticator(token: OAuthToken? = nil, leeway: TimeInterval = 60) -> OAuthAuthenticator {
        OAuthAuthenticator(
            flow: flow, token: token, store: store,
            configuration: .init(
                leeway: leeway, clock: clock,
                tokenTransport: InMemoryTransport { _ in throw URLError(.notConnectedToInternet) }))
    }

    func token(_ number: Int, expiresIn: TimeInterval = 3600) -> OAuthToken {
        OAuthToken(
            accessToken: "access-\(number)", expiresAt: clock.now.addingTimeInterval(expiresIn),
            refreshToken: "refresh-\(number)", issuedAt: clock.now)
    }

    /// A resource server that answers every request with `reply(authorization)`.
    func server(_ reply: @escaping @Sendable (String) -> (Int, String)) -> InMemoryTransport {
        InMemoryTransport { request in
            let (status, body) = reply(request.value(forHTTPHeaderField: "Authorization") ?? "")
            return try InMemoryTransport.reply(to: request, status: status, json: body)
        }
    }

    // MARK: 1.1 Secrets in errors built from authenticated responses

    @Test func anUndecodableSuccessThatEchoesTheAccessTokenDoesNotShowIt() async throws {
        let authenticator = makeAuthenticator(token: token(1))
        let api = server { authorization in (200, #"{"wrong":"\#(authorization.dropFirst(7))"}"#) }
        let error = await #expect(throws: ResourceError.self) {
            try await Me(authenticator: authenticator, transport: api).request()
        }
        #expect(error?.code == .decodingFailed)
        let text = try #require(error).description
        #expect(!text.contains("access-1"), "\(text)")
        #expect(text.contains("wrong"), "the rest of the body stays visible")
    }

    @Test func anErrorThatEchoesACredentialSentBeforeTheLastRefreshesDoesNotShowIt() async throws {
        // A request sent with access-1 is answered after two refreshes (access-2, then access-3).
        let authenticator = makeAuthenticator(token: token(1))
        await authenticator.setCredential(token(2))
        await authenticator.setCredential(token(3))
        let api = server { _ in (500, #"{"first":"access-1","second":"access-2 refresh-1","now":"access-3"}"#) }
        let error = await #expect(throws: ResourceError.self) {
            try await Me(authenticator: authenticator, transport: api).request()
        }
        let text = try #require(error).description
        for secret in ["access-1", "access-2", "refresh-1", "access-3"] { #expect(!text.contains(secret), "\(text)") }
        #expect(text.contains("first"), "the rest of the body stays visible")
        // What the engine keeps to redact is itself a secret: `dump` shows none of it.
        var dumped = ""
        dump(authenticator, to: &dumped)
        for secret in ["access-1", "access-2", "refresh-1", "refresh-2"] { #expect(!dumped.contains(secret)) }
    }

    @Test func anErrorStatusThatEchoesTheRefreshTokenOrThePreviousTokenDoesNotShowThem() async throws {
        let authenticator = makeAuthenticator(token: token(1))
        await authenticator.setCredential(token(2))  // access-1 is now the previous credential
        let api = server { _ in (500, #"{"seen":"access-1","refresh":"refresh-2","now":"access-2"}"#) }
        let error = await #expect(throws: ResourceError.self) {
            try await Me(authenticator: authenticator, transport: api).request()
        }
        let text = try #require(error).description
        for secret in ["access-1", "refresh-2", "access-2"] { #expect(!text.contains(secret), "\(text)") }
        #expect(error?.bodySnippet?.contains("seen") == true)
    }

    @Test func aTokenCutInHalfByTheSnippetLimitIsStillRemoved() async throws {
        let long = String(repeating: "T", count: 200) + "-secret-access-token-that-is-long"
        let authenticator = makeAuthenticator(
            token: OAuthToken(accessToken: long, expiresAt: clock.now.addingTimeInterval(3600)))
        let padding = String(repeating: "x", count: 120)
        let api = server { _ in (418, #"{"pad":"\#(padding)","echo":"\#(long)"}"#) }
        let error = await #expect(throws: ResourceError.self) {
            try await Me(authenticator: authenticator, transport: api).request()
        }
        let snippet = try #require(error?.bodySnippet)
        #expect(!snippet.contains(String(repeating: "T", count: 16)), "\(snippet)")
    }

    @Test func aCustomValidationErrorIsRedactedToo() async throws {
        struct Strict: AuthenticatedResource {
            typealias Output = Data
            let authenticator: any RequestAuthenticator
            let transport: any HTTPTransport
            func urlRequest(using input: Void) throws -> URLRequest {
                URLRequest(url: URL(string: "https://api.example.com/strict")!)
            }
            func validate(_ response: ResponseHead, body: Data) throws {
                throw ResourceError.unacceptableStatus(response: response, body: body)
            }
        }
        let authenticator = makeAuthenticator(token: token(7))
        let api = server { authorization in (200, #"{"echo":"\#(authorization)"}"#) }
        let error = await #expect(throws: ResourceError.self) {
            try await Strict(authenticator: authenticator, transport: api).request()
        }
        #expect(error?.description.contains("access-7") == false)
        #expect(error?.url?.path == "/strict", "the method and URL are filled in")
    }

    // MARK: 2.1 didRequest sees what really happened

    final class Recorder: Authenticator {
        let seen = Locked<[(status: Int, error: String)]>([])
        func apply(_ credential: OAuthToken, to urlRequest: inout URLRequest) {
            urlRequest.setValue("Bearer \(credential.accessToken)", forHTTPHeaderField: "Authorization")
        }
        func refresh(_ credential: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
            OAuthToken(accessToken: credential.accessToken + "+", expiresAt: context.clock.now.addingTimeInterval(60))
        }
        func didRequest(
            _ urlRequest: URLRequest, with response: ResponseHead, failDueToAuthenticationError error: any Error
        )
            -> Bool
        {
            let resourceError = error as? ResourceError
            seen.withLock {
                $0.append(
                    (response.statusCode, "\(resourceError?.code.description ?? "?") \(resourceError?.statusCode ?? 0)")
                )
            }
            return response.statusCode == 401
        }
    }

    @Test(arguments: [200, 204, 403, 500])
    func didRequestIsNeverShownAFailureForASuccess(status: Int) async throws {
        let recorder = Recorder()
        let interceptor = AuthenticationInterceptor(
            authenticator: recorder, credential: OAuthToken(accessToken: "a", expiresAt: clock.now + 3600),
            configuration: .init(clock: clock))
        let api = server { _ in (status, "{}") }
        _ = try await interceptor.send(URLRequest(url: URL(string: "https://api.example.com/x")!), over: api)
        let seen = recorder.seen.withLock { $0 }
        if (200...299).contains(status) {
            #expect(seen.isEmpty, "a success is not classified: \(seen)")
        } else {
            #expect(seen.count == 1)
            #expect(seen.first?.error == "unacceptable status \(status)", "the real status, not a made-up one")
        }
    }

    // MARK: 2.2 One rejection, one refresh

    @Test func aRefreshThatReturnsTheRejectedCredentialIsNotSentAndEndsAtTheRefreshLimit() async throws {
        // The custom authenticator's refresh returns what it was given; isRequest keeps its default.
        final class Stubborn: Authenticator {
            let refreshes = Locked(0)
            func apply(_ credential: OAuthToken, to urlRequest: inout URLRequest) {
                urlRequest.setValue("Bearer \(credential.accessToken)", forHTTPHeaderField: "Authorization")
            }
            func refresh(_ credential: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
                refreshes.withLock { $0 += 1 }
                return credential
            }
        }
        let stubborn = Stubborn()
        let interceptor = AuthenticationInterceptor(
            authenticator: stubborn, credential: OAuthToken(accessToken: "same", expiresAt: clock.now + 3600),
            configuration: .init(refreshLimit: RefreshLimit(maximumCount: 2, window: 30), clock: clock))
        let sent = Locked(0)
        let api = server { _ in
            sent.withLock { $0 += 1 }
            return (401, #"{"error":"invalid_token"}"#)
        }
        let error = await #expect(throws: AuthenticationError.self) {
            try await interceptor.send(URLRequest(url: URL(string: "https://api.example.com/x")!), over: api)
        }
        #expect(error?.code == .excessiveRefresh)
        #expect(sent.withLock { $0 } == 1, "the rejected credential is never sent again")
        #expect(stubborn.refreshes.withLock { $0 } == 2, "refreshed again up to the limit, no further")
    }

    @Test func aServerThatRejectsEveryFreshTokenCostsOneRefreshPerRequest() async throws {
        let authenticator = makeAuthenticator(token: token(0))  // the flow's refresh issues access-1
        let api = server { _ in (401, #"{"error":"invalid_token"}"#) }
        let error = await #expect(throws: ResourceError.self) {
            try await Me(authenticator: authenticator, transport: api).request()
        }
        #expect(error?.statusCode == 401)
        #expect(flow.refreshCalls == 1)
    }

    // MARK: 2.4 What is missing

    @Test func aCredentialWithoutAFlowSaysThatTheFlowIsMissing() async throws {
        let authenticator = OAuthAuthenticator(store: store, configuration: .init(clock: clock))
        await authenticator.setCredential(token(1))
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: server { _ in (200, #"{"name":"a"}"#) }).request()
        }
        #expect(error?.code == .missingCredential)
        #expect(error?.message.contains("no flow is configured") == true, "\(String(describing: error))")
    }

    // MARK: 2.5 Credentials that expire on their way

    @Test func aRefreshedTokenThatExpiredOnItsWayIsNotSentAndFailsTyped() async throws {
        // The refresh takes longer than the new token's whole life (the clock moves while the
        // token endpoint works): sending it would reach the server expired.
        final class SlowFlow: OAuthFlow {
            let clock: TestClock
            init(clock: TestClock) { self.clock = clock }
            var storeKey: String { "slow" }
            func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
                throw AuthenticationError(code: .missingCredential, message: "no")
            }
            func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
                let issued = clock.now
                clock.advance(by: 3.5)  // the 3 s token expired while the token endpoint worked
                return OAuthToken(
                    accessToken: "fresh", expiresAt: issued.addingTimeInterval(3), refreshToken: "r",
                    issuedAt: issued)
            }
        }
        let authenticator = OAuthAuthenticator(
            flow: SlowFlow(clock: clock),
            token: OAuthToken(
                accessToken: "old", expiresAt: clock.now.addingTimeInterval(-1), refreshToken: "r",
                issuedAt: clock.now.addingTimeInterval(-4)),
            configuration: .init(clock: clock))
        let sent = Locked(0)
        let api = InMemoryTransport { request in
            sent.withLock { $0 += 1 }
            return try InMemoryTransport.reply(to: request, json: #"{"name":"a"}"#)
        }
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api).request()
        }
        #expect(error?.code == .expiredInFlight)
        #expect(sent.withLock { $0 } == 0, "nothing went out with a spent token")
    }

    @Test func aRetryRejectedAfterItsTokenExpiredInFlightIsATypedError() async throws {
        let authenticator = makeAuthenticator(token: token(1, expiresIn: 20), leeway: 1)
        flow.state.withLock { $0.lifetime = 8 }
        let clock = self.clock
        let calls = Locked(0)
        // The first answer is a 401; the retry's answer arrives after its 8-second token expired.
        let api = InMemoryTransport { request in
            let call = calls.withLock {
                $0 += 1; return $0
            }
            if call == 2 { clock.advance(by: 9) }
            return try InMemoryTransport.reply(to: request, status: 401, json: #"{"error":"invalid_token"}"#)
        }
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api).request()
        }
        #expect(error?.code == .expiredInFlight)
        #expect(calls.withLock { $0 } == 2, "one retry, no more")
    }
}
