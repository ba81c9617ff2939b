import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import OpenIDConnect
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The conformance provider (`Tests/ConformanceProvider/provider.py`), which `Scripts/test`
/// starts; its control URL comes in `AUTHREQ_TEST_CONFORMANCE_PROVIDER`.
enum ConformanceProvider {
    static let url = ProcessInfo.processInfo.environment["AUTHREQ_TEST_CONFORMANCE_PROVIDER"].flatMap(
        URL.init(string:))
    static let isConfigured = url != nil
    static let notRunReason: Comment =
        "AUTHREQ_TEST_CONFORMANCE_PROVIDER is not set, so the OpenID conformance modules were NOT run. Run Scripts/test."

    /// A provider serving one module: its issuer and the client registered there.
    struct Run: Decodable {
        let id: String
        let issuer: String
        let client_id: String
        let client_secret: String
        /// The TLS listener of a run in the mTLS variant (its aliases and resource).
        let mtls_url: String?

        var issuerURL: URL { URL(string: issuer) ?? URL(fileURLWithPath: "/") }
        var client: ClientAuthentication { .clientSecretBasic(id: client_id, secret: client_secret) }
    }

    /// What the provider saw the client do.
    struct Check: Decodable {
        let id: String
        let status: String
        let description: String
    }

    /// Starts a provider serving `module`; a FAPI 2.0 or FAPI-CIBA module needs the client's
    /// public key, a FAPI-CIBA module in ping mode the client's notification endpoint.
    ///
    /// With `mutualTLS` (PEM of the client certificate, and the TLS listener's certificate, key and
    /// trusted client certificates), the run is the module's mTLS variant.
    static func start(
        _ module: String, clientJWK: [String: String]? = nil, cibaMode: String? = nil, notificationEndpoint: URL? = nil,
        mutualTLS: (clientCertificate: String, tls: [String: String])? = nil
    ) async throws -> Run {
        struct Start: Encodable {
            let module: String
            let client_jwk: [String: String]?
            let ciba_mode: String?
            let notification_endpoint: String?
            let variant: String?
            let client_certificate: String?
            let tls: [String: String]?
        }
        let base = try #require(url, notRunReason)
        var request = URLRequest(url: base.appendingPathComponent("runs"))
        request.httpMethod = "POST"
        request.httpBody = try JSONEncoder().encode(
            Start(
                module: module, client_jwk: clientJWK, ciba_mode: cibaMode,
                notification_endpoint: notificationEndpoint?.absoluteString, variant: mutualTLS.map { _ in "mtls" },
                client_certificate: mutualTLS?.clientCertificate, tls: mutualTLS?.tls))
        let (data, _) = try await URLSession.shared.data(for: request)
        return try JSONDecoder().decode(Run.self, from: data)
    }

    static func checks(of run: Run) async throws -> [Check] {
        let base = try #require(url, notRunReason)
        let (data, _) = try await URLSession.shared.data(from: base.appendingPathComponent("runs/\(run.id)/checks"))
        return try JSONDecoder().decode([Check].self, from: data)
    }

    /// Rotates the provider's signing key.
    static func rotate(_ run: Run) async throws {
        let base = try #require(url, notRunReason)
        var request = URLRequest(url: base.appendingPathComponent("runs/\(run.id)/rotate"))
        request.httpMethod = "POST"
        _ = try await URLSession.shared.data(for: request)
    }
}

/// Guards against a silent skip: in CI (`CI` set) the conformance provider must be there.
@Test func conformanceProviderIsThereInCI() {
    if ProcessInfo.processInfo.environment["CI"] != nil {
        #expect(ConformanceProvider.isConfigured, "CI must run the OpenID conformance modules: use Scripts/test")
    }
}

/// The OpenID Foundation's relying-party test plans for the code flow, ported: RP Basic
/// (`oidcc-client-basic-certification-test-plan`) and RP Config
/// (`oidcc-client-config-certification-test-plan`). One test per module, named after it, signs in
/// with `OpenIDClient` against the conformance provider serving that module, and asserts what the
/// module expects of a relying party: the sign-in succeeds, or it is refused with the rule the
/// mutation breaks and nothing is stored; and the provider saw no failed check (client_secret_basic,
/// `openid` in the scope, a nonce, PKCE S256, the bearer header at UserInfo).
@Suite(.enabled(if: ConformanceProvider.isConfigured, ConformanceProvider.notRunReason))
struct OIDCCRelyingPartyTests {
    typealias Run = ConformanceProvider.Run

    struct Outcome {
        var run: Run? = nil
        var oidc: OpenIDClient
        let authenticator: OAuthAuthenticator
        let store: InMemoryTokenStore
        let session: Result<OpenIDSession, any Error>
    }

    /// Discovers the provider and signs in with `scope` (and `authorizationDetails`, RFC 9396).
    func signIn(_ run: Run, scope: String = "openid", authorizationDetails: [AuthorizationDetail] = []) async throws
        -> Outcome
    {
        let provider = try await OpenIDProvider.discover(issuer: run.issuerURL, minimumKeyRefetchInterval: 0)
        let oidc = OpenIDClient(provider: provider, client: run.client)
        let store = InMemoryTokenStore()
        let authenticator = OAuthAuthenticator(store: store)
        let session = await Result {
            try await oidc.signIn(
                redirectURI: ResourceSignInRedirect.uri, scope: scope,
                userAgent: LoopbackUserAgent(opener: BrowserSimulator(), timeout: 30), configuring: authenticator,
                authorizationDetails: authorizationDetails)
        }
        return Outcome(oidc: oidc, authenticator: authenticator, store: store, session: session)
    }

    /// Runs `module`: expects a session, and no failed check at the provider.
    @discardableResult
    func accepts(_ module: String, scope: String = "openid", sourceLocation: SourceLocation = #_sourceLocation)
        async throws -> Outcome
    {
        let run = try await ConformanceProvider.start(module)
        var outcome = try await signIn(run, scope: scope)
        outcome.run = run
        let session = try outcome.session.get()
        #expect(session.claims.subject == "user-1", sourceLocation: sourceLocation)
        try await expectNoFailedCheck(run, sourceLocation: sourceLocation)
        return outcome
    }

    /// Runs `module`: expects the ID token refused for `rule`, and no session stored.
    func refuses(
        _ module: String, for rule: IDTokenValidationError.Rule, sourceLocation: SourceLocation = #_sourceLocation
    )
        async throws
    {
        let run = try await ConformanceProvider.start(module)
        let outcome = try await signIn(run)
        #expect(throws: IDTokenValidationError.self, sourceLocation: sourceLocation) { try outcome.session.get() }
        if case .failure(let error as IDTokenValidationError) = outcome.session {
            #expect(error.rule == rule, "\(error)", sourceLocation: sourceLocation)
        }
        #expect(
            try await outcome.authenticator.currentCredential() == nil, "nothing stored", sourceLocation: sourceLocation
        )
        try await expectNoFailedCheck(run, sourceLocation: sourceLocation)
    }

    func expectNoFailedCheck(_ run: Run, sourceLocation: SourceLocation) async throws {
        for check in try await ConformanceProvider.checks(of: run) where check.status == "FAILURE" {
            Issue.record("\(check.id): \(check.description)", sourceLocation: sourceLocation)
        }
    }

    // MARK: RP Basic, code flow

    @Test func oidccClientTest() async throws {
        let outcome = try await accepts("oidcc-client-test")
        let info = try await outcome.oidc.userInfo(using: outcome.authenticator)
        #expect(info["sub"] == .string("user-1"))
    }

    @Test func oidccClientTestInvalidIss() async throws {
        try await refuses("oidcc-client-test-invalid-iss", for: .issuer)
    }

    @Test func oidccClientTestMissingSub() async throws {
        try await refuses("oidcc-client-test-missing-sub", for: .subject)
    }

    @Test func oidccClientTestInvalidAud() async throws {
        try await refuses("oidcc-client-test-invalid-aud", for: .audience)
    }

    @Test func oidccClientTestMissingIat() async throws {
        try await refuses("oidcc-client-test-missing-iat", for: .issuedAt)
    }

    @Test func oidccClientTestKidAbsentSingleJwks() async throws {
        try await accepts("oidcc-client-test-kid-absent-single-jwks")
    }

    /// The module lets the client either reject the token (it cannot tell which key signed it) or
    /// try each key; this client rejects it: without a `kid`, only a key set with one usable key
    /// names the key.
    @Test func oidccClientTestKidAbsentMultipleJwks() async throws {
        try await refuses("oidcc-client-test-kid-absent-multiple-jwks", for: .unknownKey)
    }

    @Test func oidccClientTestIdtokenSigRS256() async throws {
        try await accepts("oidcc-client-test-idtoken-sig-rs256")
    }

    /// The module expects a client registered with `id_token_signed_response_alg=none` to accept
    /// an unsigned ID token from the code flow. This client never registers `none` and refuses
    /// unsigned ID tokens, which the module's variant does not exercise; the refusal is the result.
    @Test func oidccClientTestIdtokenSigNone() async throws {
        try await refuses("oidcc-client-test-idtoken-sig-none", for: .algorithm)
    }

    @Test func oidccClientTestInvalidSigRS256() async throws {
        try await refuses("oidcc-client-test-invalid-sig-rs256", for: .signature)
    }

    @Test func oidccClientTestUserinfoInvalidSub() async throws {
        let outcome = try await accepts("oidcc-client-test-userinfo-invalid-sub")
        let error = await #expect(throws: OpenIDConnectError.self) {
            _ = try await outcome.oidc.userInfo(using: outcome.authenticator)
        }
        #expect(error?.code == .subjectMismatch)
    }

    @Test func oidccClientTestNonceInvalid() async throws {
        try await refuses("oidcc-client-test-nonce-invalid", for: .nonce)
    }

    @Test func oidccClientTestScopeUserinfoClaims() async throws {
        let outcome = try await accepts("oidcc-client-test-scope-userinfo-claims", scope: "openid profile email")
        let info = try await outcome.oidc.userInfo(using: outcome.authenticator)
        #expect(info["name"] == .string("Ada Lovelace"))
        #expect(info["email"] == .string("ada@example.com"))
    }

    @Test func oidccClientTestClientSecretBasic() async throws {
        let run = try await ConformanceProvider.start("oidcc-client-test-client-secret-basic")
        _ = try await signIn(run).session.get()
        let checks = try await ConformanceProvider.checks(of: run)
        #expect(checks.contains { $0.id == "client-secret-basic" && $0.status == "SUCCESS" })
        try await expectNoFailedCheck(run, sourceLocation: #_sourceLocation)
    }

    // MARK: UserInfo: signed replies and claims held elsewhere (Core §5.3.2, §5.6.2)

    @Test func oidccClientTestUserinfoSigned() async throws {
        let outcome = try await accepts("oidcc-client-test-userinfo-signed", scope: "openid profile email")
        let info = try await outcome.oidc.userInfo(using: outcome.authenticator)
        #expect(info["sub"] == .string("user-1"))
        #expect(info["email"] == .string("ada@example.com"))
        let checks = try await ConformanceProvider.checks(of: try #require(outcome.run))
        #expect(checks.contains { $0.id == "userinfo-signed" }, "the reply was a signed JWT")
    }

    @Test(arguments: [
        "authreq-userinfo-signed-bad-signature", "authreq-userinfo-signed-other-aud",
        "authreq-userinfo-signed-other-iss", "authreq-userinfo-signed-alg-none",
    ])
    func aSignedUserInfoThatFailsACheckIsRefused(module: String) async throws {
        let outcome = try await accepts(module)
        let error = await #expect(throws: OpenIDConnectError.self) {
            _ = try await outcome.oidc.userInfo(using: outcome.authenticator)
        }
        #expect(error?.code == .untrustedUserInfo, "\(String(describing: error))")
    }

    @Test func authreqUserinfoSignedExpired() async throws {
        let outcome = try await accepts("authreq-userinfo-signed-expired")
        let error = await #expect(throws: OpenIDConnectError.self) {
            _ = try await outcome.oidc.userInfo(using: outcome.authenticator)
        }
        #expect(error?.code == .untrustedUserInfo)
        #expect(error?.message.contains("expired") == true, "\(String(describing: error))")
    }

    /// The suite's aggregated source is Core's example, signed with alg `none`: its claims cannot
    /// be verified and are not used, and the rest of UserInfo is returned with the source named.
    @Test func oidccClientTestAggregatedClaims() async throws {
        let outcome = try await accepts("oidcc-client-test-aggregated-claims")
        let info = try await outcome.oidc.userInfo(using: outcome.authenticator)
        #expect(info.subject == "user-1")
        #expect(info["address"] == nil && info["phone_number"] == nil, "unsigned claims are not used")
        #expect(info.failedClaimSources.map(\.source) == ["src1"])
        #expect(info.failedClaimSources.first?.claims == ["address", "phone_number"])
        #expect(info.failedClaimSources.first?.error.code == .claimSourceFailed)
    }

    /// The same source signed by the provider, naming it as `iss`: verified and in place.
    @Test func authreqAggregatedClaimsSigned() async throws {
        let outcome = try await accepts("authreq-aggregated-claims-signed")
        let info = try await outcome.oidc.userInfo(using: outcome.authenticator)
        #expect(info["address"]?.objectValue?["country"] == .string("US"), "the aggregated claim, verified")
        #expect(info["phone_number"] == .string("+1 (310) 123-4567"))
        #expect(info["_claim_names"] == nil && info["_claim_sources"] == nil, "the pointers are resolved")
        #expect(info.failedClaimSources.isEmpty)
    }

    /// The suite signs exactly `{"credit_score":650}` with the provider's key: no `iss`, no
    /// `sub`. The application names the claims endpoint and its keys; the claim is verified.
    @Test func oidccClientTestDistributedClaims() async throws {
        var outcome = try await accepts("oidcc-client-test-distributed-claims")
        let run = try #require(outcome.run)
        let endpoint = try #require(URL(string: run.issuer + "/claims"))
        outcome.oidc.claimsProviders = [.endpoint(endpoint, keys: .openIDProvider)]
        let info = try await outcome.oidc.userInfo(using: outcome.authenticator)
        #expect(info["credit_score"] == .number(650), "fetched from the claims endpoint, verified")
        #expect(info.failedClaimSources.isEmpty)
        let checks = try await ConformanceProvider.checks(of: run)
        #expect(checks.contains { $0.id == "claims-endpoint-bearer" && $0.status == "SUCCESS" })
    }

    /// Without a claims provider named for it, the same source is not trusted: UserInfo comes back
    /// without `credit_score`, the source named with its error.
    @Test func aClaimSourceNobodyNamedIsNotTrustedAndTheRestOfUserInfoIsReturned() async throws {
        let outcome = try await accepts("oidcc-client-test-distributed-claims")
        let info = try await outcome.oidc.userInfo(using: outcome.authenticator)
        #expect(info.subject == "user-1")
        #expect(info["credit_score"] == nil)
        #expect(info["_claim_names"]?.objectValue?["credit_score"] == .string("src1"), "the pointer is kept")
        let failure = try #require(info.failedClaimSources.first)
        #expect(failure.source == "src1" && failure.error.code == .claimSourceFailed)
        #expect(failure.error.message.contains("does not trust"), "\(failure)")
    }

    @Test(arguments: [
        "authreq-distributed-claims-bad-signature", "authreq-distributed-claims-other-subject",
        "authreq-distributed-claims-expired", "authreq-distributed-claims-untrusted-issuer",
        "authreq-distributed-claims-file-issuer",
    ])
    func aClaimSourceThatCannotBeTrustedGivesNoClaim(module: String) async throws {
        var outcome = try await accepts(module)
        let run = try #require(outcome.run)
        // Trusted for its endpoint with the provider's keys, as in the suite's module: each of
        // these still fails on its own ground (signature, subject, expiry, an issuer of its own).
        if !module.hasSuffix("issuer") {
            outcome.oidc.claimsProviders = [
                .endpoint(try #require(URL(string: run.issuer + "/claims")), keys: .openIDProvider)
            ]
        }
        let info = try await outcome.oidc.userInfo(using: outcome.authenticator)
        #expect(info["credit_score"] == nil, "\(module)")
        let failure = try #require(info.failedClaimSources.first, "\(module)")
        #expect(failure.error.code == .claimSourceFailed, "\(failure)")
        #expect(info.subject == "user-1", "the rest of UserInfo is returned")
    }

    // MARK: RP Config

    @Test func oidccClientTestDiscoveryOpenidConfig() async throws {
        let run = try await ConformanceProvider.start("oidcc-client-test-discovery-openid-config")
        _ = try await signIn(run).session.get()
        #expect(try await ConformanceProvider.checks(of: run).contains { $0.id == "discovery-requested" })
    }

    @Test func oidccClientTestDiscoveryJwksUriKeys() async throws {
        let run = try await ConformanceProvider.start("oidcc-client-test-discovery-jwks-uri-keys")
        _ = try await signIn(run).session.get()
        #expect(try await ConformanceProvider.checks(of: run).contains { $0.id == "jwks-requested" })
    }

    @Test func oidccClientTestDiscoveryIssuerMismatch() async throws {
        let run = try await ConformanceProvider.start("oidcc-client-test-discovery-issuer-mismatch")
        await #expect(throws: (any Error).self) {
            _ = try await OpenIDProvider.discover(issuer: run.issuerURL)
        }
        let checks = try await ConformanceProvider.checks(of: run)
        #expect(!checks.contains { $0.id == "openid-scope" }, "no sign-in began")
    }

    @Test func oidccClientTestSigningKeyRotationJustBeforeSigning() async throws {
        let run = try await ConformanceProvider.start("oidcc-client-test-signing-key-rotation-just-before-signing")
        _ = try await signIn(run).session.get()
    }

    @Test func oidccClientTestSigningKeyRotation() async throws {
        let run = try await ConformanceProvider.start("oidcc-client-test-signing-key-rotation")
        let first = try await signIn(run)
        _ = try first.session.get()
        try await ConformanceProvider.rotate(run)
        // The same client signs in again: the new key's kid is unknown, so the keys are fetched again.
        let second = try await first.oidc.signIn(
            redirectURI: ResourceSignInRedirect.uri, scope: "openid",
            userAgent: LoopbackUserAgent(opener: BrowserSimulator(), timeout: 30),
            configuring: OAuthAuthenticator(store: InMemoryTokenStore()))
        #expect(second.claims.subject == "user-1")
        let fetches = try await ConformanceProvider.checks(of: run).filter { $0.id == "jwks-requested" }.count
        #expect(fetches == 2, "one fetch per key")
    }

    // MARK: Refresh-token profile

    /// Signs in, then refreshes: the refresh's new ID token is validated against the first.
    func refresh(_ module: String) async throws -> Result<OAuthToken, any Error> {
        let run = try await ConformanceProvider.start(module)
        let outcome = try await signIn(run)
        let token = try outcome.session.get().token
        let flow = try outcome.oidc.sessionFlow()
        return await Result { try await flow.refresh(token, for: outcome.authenticator.context) }
    }

    func refreshRefused(
        _ module: String, for rule: IDTokenValidationError.Rule, sourceLocation: SourceLocation = #_sourceLocation
    )
        async throws
    {
        let refreshed = try await refresh(module)
        #expect(throws: IDTokenValidationError.self, sourceLocation: sourceLocation) { try refreshed.get() }
        if case .failure(let error as IDTokenValidationError) = refreshed {
            #expect(error.rule == rule, "\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func oidccClientTestRefreshToken() async throws {
        let refreshed = try await refresh("oidcc-client-test-refresh-token").get()
        #expect(refreshed.idTokenClaims?.subject == "user-1")
    }

    @Test func oidccClientTestRefreshTokenInvalidIssuer() async throws {
        try await refreshRefused("oidcc-client-test-refresh-token-invalid-issuer", for: .issuer)
    }

    @Test func oidccClientTestRefreshTokenInvalidAud() async throws {
        try await refreshRefused("oidcc-client-test-refresh-token-invalid-aud", for: .audience)
    }

    @Test func oidccClientTestRefreshTokenInvalidAzp() async throws {
        try await refreshRefused("oidcc-client-test-refresh-token-invalid-azp", for: .authorizedParty)
    }

    @Test func oidccClientTestRefreshTokenInvalidSub() async throws {
        try await refreshRefused("oidcc-client-test-refresh-token-invalid-sub", for: .subject)
    }

    // MARK: RP-initiated logout

    func logout(_ module: String) async throws -> (Run, Result<Void, any Error>, OAuthAuthenticator) {
        let run = try await ConformanceProvider.start(module)
        let outcome = try await signIn(run)
        _ = try outcome.session.get()
        let result = await Result {
            try await outcome.oidc.signOut(
                outcome.authenticator, postLogoutRedirectURI: ResourceSignInRedirect.uri,
                userAgent: LoopbackUserAgent(opener: BrowserSimulator(), timeout: 5))
        }
        return (run, result, outcome.authenticator)
    }

    @Test func oidccClientTestRpInitLogout() async throws {
        let (run, result, authenticator) = try await logout("oidcc-client-test-rp-init-logout")
        try result.get()
        #expect(try await authenticator.currentCredential() == nil)
        let checks = try await ConformanceProvider.checks(of: run)
        #expect(checks.contains { $0.id == "logout-id-token-hint" && $0.status == "SUCCESS" })
        try await expectNoFailedCheck(run, sourceLocation: #_sourceLocation)
    }

    /// A logout redirect with another state (or none) is not taken for the logout's answer; the
    /// local session is gone all the same.
    @Test(arguments: ["oidcc-client-test-rp-init-logout-other-state", "oidcc-client-test-rp-init-logout-no-state"])
    func oidccClientTestRpInitLogoutWithoutItsState(module: String) async throws {
        let (_, result, authenticator) = try await logout(module)
        #expect(throws: (any Error).self) { try result.get() }
        #expect(try await authenticator.currentCredential() == nil, "signed out locally")
    }

    // MARK: RAR (RFC 9396)

    static let payment = AuthorizationDetail(
        type: "payment_initiation",
        fields: [
            "instructedAmount": .object(["currency": .string("EUR"), "amount": .string("123.50")]),
            "creditorName": .string("Merchant A"), "actions": .array([.string("initiate")]),
        ])

    @Test func rarAuthorizationDetails() async throws {
        let run = try await ConformanceProvider.start("rar-authorization-details")
        let outcome = try await signIn(run, authorizationDetails: [Self.payment])
        let granted = try #require(try outcome.session.get().token.authorizationDetails)
        #expect(granted.map(\.type) == ["payment_initiation"])
        #expect(granted.first?.identifier == "grant-0")
        #expect(granted.first?.strings("actions") == ["initiate"])
        #expect(granted.first?.fields["creditorName"] == .string("Merchant A"))
        // Kept with the credential: another process restores it from the store.
        let restored = try #require(try await outcome.oidc.restore(store: outcome.store))
        #expect(try await restored.currentCredential()?.authorizationDetails == granted)
        let checks = try await ConformanceProvider.checks(of: run)
        for id in ["rar-authorization-request", "rar-token-request"] {
            #expect(checks.contains { $0.id == id && $0.status == "SUCCESS" }, "\(id)")
        }
        try await expectNoFailedCheck(run, sourceLocation: #_sourceLocation)
    }

    @Test func rarMalformedGrantedDetails() async throws {
        let run = try await ConformanceProvider.start("rar-malformed-granted-details")
        let outcome = try await signIn(run, authorizationDetails: [Self.payment])
        #expect(throws: TokenEndpointError.self) { try outcome.session.get() }
        if case .failure(let error as TokenEndpointError) = outcome.session {
            #expect(error.field == "authorization_details", "\(error)")
        }
        #expect(try await outcome.authenticator.currentCredential() == nil, "nothing stored")
    }

    // MARK: Other signing algorithms

    @Test func oidccClientTestIdtokenSigES256() async throws {
        try await accepts("oidcc-client-test-idtoken-sig-es256")
    }

    @Test func oidccClientTestIdtokenSigPS256() async throws {
        try await accepts("oidcc-client-test-idtoken-sig-ps256")
    }
}

/// The loopback redirect URI the conformance tests register (any port, RFC 8252 §7.3).
enum ResourceSignInRedirect {
    static let uri = URL(string: "http://127.0.0.1/callback") ?? URL(fileURLWithPath: "/")
}
