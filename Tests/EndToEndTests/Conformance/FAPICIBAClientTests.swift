import AuthenticatedRequests
import Foundation
import JWTKit
import OAuthFlows
import OpenIDConnect
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The FAPI-CIBA client test modules (OpenID Foundation, `fapi-ciba-id1-client-test-plan`), for
/// the variant private_key_jwt in poll and ping mode, ported: one test per module against the
/// conformance provider, which requires signed authentication requests and private_key_jwt,
/// checks the polling interval, answers each module's token responses and ID tokens, and pings
/// the client's notification endpoint (a loopback server feeding `BackchannelNotifications`).
/// FAPI 1's mutual TLS token binding is not ported (see the provider).
@Suite(.enabled(if: ConformanceProvider.isConfigured, ConformanceProvider.notRunReason))
struct FAPICIBAClientTests {
    typealias Run = ConformanceProvider.Run

    struct ProtectedResource: AuthenticatedResource {
        struct Output: Decodable, Sendable { let sub: String }
        let authenticator: any RequestAuthenticator
        let url: URL
        func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
    }

    /// A FAPI-CIBA client of one module's provider, its request to the resource under way.
    struct Client {
        let run: Run
        let authenticator: OAuthAuthenticator
        let answer: Task<String, any Error>
        let endpoint: LoopbackHTTPServer?

        func checks() async throws -> [ConformanceProvider.Check] { try await ConformanceProvider.checks(of: run) }
    }

    /// Starts `module` in `mode`, and a request to its resource that waits for the user's approval.
    func start(_ module: String, mode: String = "poll") async throws -> Client {
        let notifications = BackchannelNotifications()
        var endpoint: LoopbackHTTPServer?
        if mode == "ping" {
            endpoint = try await LoopbackHTTPServer { request in
                let status = Locked<Int>(500)
                let done = DispatchSemaphore(value: 0)
                Task {
                    let outcome = await notifications.handle(
                        authorization: request.header("Authorization"), body: request.body)
                    status.withLock { $0 = outcome.statusCode }
                    done.signal()
                }
                done.wait()
                return LoopbackHTTPServer.Reply(status: status.withLock { $0 })
            }
        }
        let key = ES256PrivateKey()
        let (x, y) = try #require(key.publicKey.parameters)
        let run = try await ConformanceProvider.start(
            module, clientJWK: ["kty": "EC", "crv": "P-256", "x": x, "y": y, "alg": "ES256"], cibaMode: mode,
            notificationEndpoint: endpoint.map { $0.baseURL.appendingPathComponent("ciba") })
        let provider = try await OpenIDProvider.discover(issuer: run.issuerURL, minimumKeyRefetchInterval: 0)
        let signer = PrivateKeyJWT(key: key, audience: .issuer(run.issuer))
        let oidc = OpenIDClient(provider: provider, client: .assertion(id: run.client_id, signer: signer))
        let flow = try oidc.backchannelSessionFlow(
            request: BackchannelAuthenticationRequest(hint: .loginHint("user-1"), bindingMessage: "FAPI-CIBA 42"),
            deliveryMode: mode == "ping" ? .ping(notifications) : .poll, requestObjectSigner: signer)
        let authenticator = OAuthAuthenticator(flow: flow, store: InMemoryTokenStore())
        let resource = ProtectedResource(
            authenticator: authenticator, url: run.issuerURL.appendingPathComponent("resource"))
        return Client(
            run: run, authenticator: authenticator, answer: Task { try await resource.request().sub },
            endpoint: endpoint)
    }

    /// The module's flow succeeds in poll and ping mode, the resource answers, and the provider
    /// saw no failed check.
    @discardableResult
    func accepts(_ module: String, mode: String, sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> Client
    {
        let client = try await start(module, mode: mode)
        defer { Task { [endpoint = client.endpoint] in try? await endpoint?.shutdown() } }
        #expect(try await client.answer.value == "user-1", sourceLocation: sourceLocation)
        let checks = try await client.checks()
        for check in checks where check.status == "FAILURE" {
            Issue.record("\(check.id): \(check.description)", sourceLocation: sourceLocation)
        }
        var expected = [
            "private-key-jwt", "ciba-signed-request", "ciba-openid-scope", "ciba-one-hint", "resource-bearer",
        ]
        expected +=
            mode == "ping" ? ["ciba-notification-token", "ciba-ping-accepted", "ciba-after-ping"] : ["ciba-interval"]
        for id in expected {
            #expect(checks.contains { $0.id == id && $0.status == "SUCCESS" }, "\(id)", sourceLocation: sourceLocation)
        }
        #expect(
            checks.contains { $0.id == "ciba-parameters-inside-request" && $0.status == "SUCCESS" },
            sourceLocation: sourceLocation)
        return client
    }

    /// The module's ID token is refused for `rule`; nothing is stored.
    func refuses(
        _ module: String, for rule: IDTokenValidationError.Rule, sourceLocation: SourceLocation = #_sourceLocation
    )
        async throws
    {
        let client = try await start(module)
        let error = await #expect(throws: (any Error).self, sourceLocation: sourceLocation) {
            try await client.answer.value
        }
        let validation = try #require(
            Self.underlying(IDTokenValidationError.self, in: error), "\(String(describing: error))")
        #expect(validation.rule == rule, "\(validation)", sourceLocation: sourceLocation)
        #expect(try await client.authenticator.currentCredential() == nil, sourceLocation: sourceLocation)
    }

    /// The module's refusal ends the flow with `code`, and nothing more is sent after it.
    func endsWith(_ module: String, code: OAuthErrorCode, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let client = try await start(module)
        let error = await #expect(throws: (any Error).self, sourceLocation: sourceLocation) {
            try await client.answer.value
        }
        let oauth = try #require(Self.underlying(OAuthError.self, in: error), "\(String(describing: error))")
        #expect(oauth.code == code, sourceLocation: sourceLocation)
        try await Task.sleep(for: .seconds(2))  // two intervals: a client that went on would have polled
        let checks = try await client.checks()
        #expect(
            !checks.contains { $0.id == "ciba-no-request-after-end" && $0.status == "FAILURE" },
            sourceLocation: sourceLocation)
        for check in checks where check.status == "FAILURE" {
            Issue.record("\(check.id): \(check.description)", sourceLocation: sourceLocation)
        }
    }

    /// The error of type `T` a request failed with, itself or underneath an `AuthenticationError`.
    static func underlying<T: Error>(_ type: T.Type, in error: (any Error)?) -> T? {
        if let found = error as? T { return found }
        if let wrapped = error as? AuthenticationError { return underlying(type, in: wrapped.underlyingError) }
        return nil
    }

    // MARK: Happy paths

    @Test(arguments: ["poll", "ping"]) func fapiCibaId1ClientTest(mode: String) async throws {
        try await accepts("fapi-ciba-id1-client-test", mode: mode)
    }

    @Test func fapiCibaId1ClientRefreshTokenTest() async throws {
        let client = try await accepts("fapi-ciba-id1-client-refresh-token-test", mode: "poll")
        let token = try #require(try await client.authenticator.currentCredential())
        let stale = token.accessToken
        let refreshed = try await client.authenticator.validCredential { $0.accessToken != stale }
        #expect(refreshed.accessToken != token.accessToken)
        #expect(refreshed.idTokenClaims?.subject == "user-1", "the refresh's ID token validated and kept")
        let resource = ProtectedResource(
            authenticator: client.authenticator, url: client.run.issuerURL.appendingPathComponent("resource"))
        #expect(try await resource.request().sub == "user-1")
    }

    @Test func fapiCibaId1ClientValidAudAsArrayTest() async throws {
        try await accepts("fapi-ciba-id1-client-valid-aud-as-array-test", mode: "poll")
    }

    @Test func fapiCibaId1ClientNoScopeInTokenEndpointResponseTest() async throws {
        let client = try await accepts("fapi-ciba-id1-client-no-scope-in-token-endpoint-response-test", mode: "poll")
        let token = try #require(try await client.authenticator.currentCredential())
        #expect(token.scope == "openid", "the requested scope when the response names none")
        #expect(token.expiresAt == nil)
    }

    @Test func fapiCibaId1ClientRespectsIntervalTest() async throws {
        // The provider's check fails a poll sooner than its 31 s interval.
        try await accepts("fapi-ciba-id1-client-respects-interval-test", mode: "poll")
    }

    @Test func fapiCibaId1ClientSlowDownTest() async throws {
        let client = try await accepts("fapi-ciba-id1-client-slow-down-test", mode: "poll")
        let intervals = try await client.checks().filter { $0.id == "ciba-interval" }
        #expect(
            intervals.count == 2 && intervals.allSatisfy { $0.status == "SUCCESS" }, "5 s, then 10 s after slow_down")
    }

    // MARK: The backchannel response

    @Test(arguments: [
        ("fapi-ciba-id1-client-invalid-missing-authreqid-test", "auth_req_id"),
        ("fapi-ciba-id1-client-invalid-missing-expiresin-test", "expires_in"),
    ])
    func fapiCibaId1ClientInvalidMissingField(module: String, field: String) async throws {
        let client = try await start(module)
        let error = await #expect(throws: (any Error).self) { try await client.answer.value }
        let refusal = try #require(Self.underlying(TokenEndpointError.self, in: error), "\(String(describing: error))")
        #expect(refusal.code == .missingField && refusal.field == field, "\(refusal)")
        #expect(!(try await client.checks()).contains { $0.id == "ciba-token-answer" }, "no token request")
    }

    @Test(arguments: [
        ("fapi-ciba-id1-client-invalid-expired-id-token-hint-test", "expired_id_token_hint"),
        ("fapi-ciba-id1-client-invalid-unknown-user-id-test", "unknown_user_id"),
        ("fapi-ciba-id1-client-invalid-id-token-hint-test", "invalid_id_token_hint"),
    ])
    func fapiCibaId1ClientBackchannelError(module: String, code: String) async throws {
        let client = try await start(module)
        let error = await #expect(throws: (any Error).self) { try await client.answer.value }
        let oauth = try #require(Self.underlying(OAuthError.self, in: error), "\(String(describing: error))")
        #expect(oauth.code.rawValue == code)
        #expect(oauth.statusCode == 400)
        try await Task.sleep(for: .seconds(1))
        #expect(!(try await client.checks()).contains { $0.id == "ciba-token-answer" }, "no further request")
    }

    // MARK: The token endpoint's answers

    @Test func fapiCibaId1ClientInvalidRequestTest() async throws {
        try await endsWith("fapi-ciba-id1-client-invalid-request-test", code: .invalidRequest)
    }

    @Test func fapiCibaId1ClientInvalidAccessDeniedTest() async throws {
        try await endsWith("fapi-ciba-id1-client-invalid-access-denied-test", code: .accessDenied)
    }

    @Test func fapiCibaId1ClientInvalidExpiredTokenTest() async throws {
        try await endsWith("fapi-ciba-id1-client-invalid-expired-token-test", code: .expiredToken)
    }

    // MARK: The ID token

    @Test func fapiCibaId1ClientInvalidIssTest() async throws {
        try await refuses("fapi-ciba-id1-client-invalid-iss-test", for: .issuer)
    }

    @Test func fapiCibaId1ClientInvalidAudTest() async throws {
        try await refuses("fapi-ciba-id1-client-invalid-aud-test", for: .audience)
    }

    @Test func fapiCibaId1ClientInvalidSecondaryAudTest() async throws {
        try await refuses("fapi-ciba-id1-client-invalid-secondary-aud-test", for: .audience)
    }

    @Test func fapiCibaId1ClientInvalidSignatureTest() async throws {
        try await refuses("fapi-ciba-id1-client-invalid-signature-test", for: .signature)
    }

    @Test func fapiCibaId1ClientInvalidNullAlgTest() async throws {
        try await refuses("fapi-ciba-id1-client-invalid-null-alg-test", for: .algorithm)
    }

    @Test func fapiCibaId1ClientInvalidAlternateAlgTest() async throws {
        try await refuses("fapi-ciba-id1-client-invalid-alternate-alg-test", for: .algorithm)
    }

    @Test func fapiCibaId1ClientInvalidExpiredExpTest() async throws {
        try await refuses("fapi-ciba-id1-client-invalid-expired-exp-test", for: .expired)
    }

    @Test func fapiCibaId1ClientInvalidIatIsWeekInPastTest() async throws {
        try await refuses("fapi-ciba-id1-client-invalid-iat-is-week-in-past-test", for: .issuedAt)
    }

    @Test func fapiCibaId1ClientInvalidMissingAudTest() async throws {
        try await refuses("fapi-ciba-id1-client-invalid-missing-aud-test", for: .audience)
    }

    @Test func fapiCibaId1ClientInvalidMissingExpTest() async throws {
        try await refuses("fapi-ciba-id1-client-invalid-missing-exp-test", for: .expired)
    }

    @Test func fapiCibaId1ClientInvalidMissingIssTest() async throws {
        try await refuses("fapi-ciba-id1-client-invalid-missing-iss-test", for: .issuer)
    }

    // MARK: Ping

    @Test func fapiCibaId1ClientPingWithInvalidBearerTokenTest() async throws {
        let client = try await start("fapi-ciba-id1-client-ping-with-invalid-bearer-token-test", mode: "ping")
        defer { Task { [endpoint = client.endpoint] in try? await endpoint?.shutdown() } }
        var checks: [ConformanceProvider.Check] = []
        for _ in 0..<100 where !checks.contains(where: { $0.id == "ciba-ping-refused" }) {
            try await Task.sleep(for: .milliseconds(100))
            checks = try await client.checks()
        }
        #expect(checks.contains { $0.id == "ciba-ping-refused" && $0.status == "SUCCESS" }, "answered 401")
        try await Task.sleep(for: .seconds(2))
        #expect(!(try await client.checks()).contains { $0.id == "ciba-token-answer" }, "the auth_req_id not redeemed")
        client.answer.cancel()
        await #expect(throws: (any Error).self) { try await client.answer.value }
    }
}
