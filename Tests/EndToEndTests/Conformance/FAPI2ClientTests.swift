import AuthenticatedRequests
import CodeFlowOAuth
import DPoP
import Foundation
import JWTKit
import OAuthFlows
import OpenIDConnect
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The FAPI 2.0 Security Profile's client test modules (OpenID Foundation,
/// `fapi2spfinal`), for the variant private_key_jwt + DPoP, ported: one test per module against the
/// conformance provider, which requires PAR, authenticates the client by its signed assertion
/// (audience the issuer), binds tokens with DPoP (with server nonces unless the module says not),
/// sends RFC 9207's `iss`, and serves a DPoP-protected resource.
@Suite(.enabled(if: ConformanceProvider.isConfigured, ConformanceProvider.notRunReason))
struct FAPI2ClientTests {
    typealias Run = ConformanceProvider.Run

    /// The FAPI 2.0 client: private_key_jwt (ES256) with the issuer as audience, DPoP, PAR.
    struct Client {
        let run: Run
        let oidc: OpenIDClient
        let authenticator: OAuthAuthenticator
        let session: Result<OpenIDSession, any Error>
    }

    /// A FAPI 2.0 protected resource of the provider.
    struct ProtectedResource: AuthenticatedResource {
        struct Output: Decodable, Sendable { let sub: String }
        let authenticator: any RequestAuthenticator
        let url: URL
        func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
    }

    func signIn(
        _ module: String, timeout: TimeInterval = 30, authorizationDetails: [AuthorizationDetail] = [],
        requestObject: Bool = false, pushes: Bool = true, signedResponses: Bool = false,
        responseMode: SignedResponseMode = .jwt, userAgent: (any AuthorizationUserAgent)? = nil,
        redirectURI: URL = ResourceSignInRedirect.uri
    ) async throws -> Client {
        let key = ES256PrivateKey()
        let (x, y) = try #require(key.publicKey.parameters)
        let run = try await ConformanceProvider.start(
            module, clientJWK: ["kty": "EC", "crv": "P-256", "x": x, "y": y, "alg": "ES256"])
        let provider = try await OpenIDProvider.discover(issuer: run.issuerURL, minimumKeyRefetchInterval: 0)
        let signer = PrivateKeyJWT(key: key, audience: .issuer(run.issuer))
        let oidc = OpenIDClient(provider: provider, client: .assertion(id: run.client_id, signer: signer))
        let authenticator = OAuthAuthenticator(
            store: InMemoryTokenStore(), configuration: .init(proofOfPossession: DPoPProver()))
        let session = await Result {
            try await oidc.signIn(
                redirectURI: redirectURI, scope: "openid",
                userAgent: userAgent ?? LoopbackUserAgent(opener: BrowserSimulator(), timeout: timeout),
                configuring: authenticator, pushesAuthorizationRequests: pushes,
                authorizationDetails: authorizationDetails, requestObjectSigner: requestObject ? signer : nil,
                signedAuthorizationResponses: signedResponses, signedResponseMode: responseMode)
        }
        return Client(run: run, oidc: oidc, authenticator: authenticator, session: session)
    }

    /// The module's sign-in succeeds, the resource answers, and the provider saw no failed check.
    @discardableResult
    func accepts(_ module: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Client {
        let client = try await signIn(module)
        let session = try client.session.get()
        #expect(session.claims.subject == "user-1", sourceLocation: sourceLocation)
        let resource = ProtectedResource(
            authenticator: client.authenticator, url: client.run.issuerURL.appendingPathComponent("resource"))
        #expect(try await resource.request().sub == "user-1", sourceLocation: sourceLocation)
        let checks = try await ConformanceProvider.checks(of: client.run)
        for check in checks where check.status == "FAILURE" {
            Issue.record("\(check.id): \(check.description)", sourceLocation: sourceLocation)
        }
        for id in ["par-used", "private-key-jwt", "dpop-token-request", "resource-dpop-proof", "pkce-s256"] {
            #expect(checks.contains { $0.id == id && $0.status == "SUCCESS" }, "\(id)", sourceLocation: sourceLocation)
        }
        return client
    }

    /// The module's ID token is refused for `rule`; nothing is stored.
    func refuses(
        _ module: String, for rule: IDTokenValidationError.Rule, sourceLocation: SourceLocation = #_sourceLocation
    )
        async throws
    {
        let client = try await signIn(module)
        #expect(throws: IDTokenValidationError.self, sourceLocation: sourceLocation) { try client.session.get() }
        if case .failure(let error as IDTokenValidationError) = client.session {
            #expect(error.rule == rule, "\(error)", sourceLocation: sourceLocation)
        }
        #expect(try await client.authenticator.currentCredential() == nil, sourceLocation: sourceLocation)
    }

    /// The module's authorization response is refused before the code is redeemed.
    func refusesTheResponse(
        _ module: String, with code: CodeFlowError.Code, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let client = try await signIn(module, timeout: 3)
        #expect(throws: CodeFlowError.self, sourceLocation: sourceLocation) { try client.session.get() }
        if case .failure(let error as CodeFlowError) = client.session {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        }
        let checks = try await ConformanceProvider.checks(of: client.run)
        #expect(
            !checks.contains { $0.id == "pkce-verifier" }, "the code was not redeemed", sourceLocation: sourceLocation)
    }

    @Test func fapi2SecurityProfileFinalClientTestHappyPath() async throws {
        let client = try await accepts("fapi2-security-profile-final-client-test-happy-path")
        let checks = try await ConformanceProvider.checks(of: client.run)
        #expect(checks.contains { $0.id == "dpop-nonce-challenged" }, "the provider's nonce was answered")
        #expect(checks.contains { $0.id == "resource-nonce-challenged" }, "the resource's nonce was answered")
    }

    @Test func fapi2SecurityProfileFinalClientTestHappyPathNoDpopNonce() async throws {
        try await accepts("fapi2-security-profile-final-client-test-happy-path-no-dpop-nonce")
    }

    @Test func fapi2SecurityProfileFinalClientTestDiscoveryIssuerMismatch() async throws {
        let run = try await ConformanceProvider.start(
            "fapi2-security-profile-final-client-test-discovery-issuer-mismatch")
        await #expect(throws: (any Error).self) { _ = try await OpenIDProvider.discover(issuer: run.issuerURL) }
        #expect(!(try await ConformanceProvider.checks(of: run)).contains { $0.id == "par-used" })
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidIss() async throws {
        try await refuses("fapi2-security-profile-final-client-test-invalid-iss", for: .issuer)
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidAud() async throws {
        try await refuses("fapi2-security-profile-final-client-test-invalid-aud", for: .audience)
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidSecondaryAud() async throws {
        try await refuses("fapi2-security-profile-final-client-test-invalid-secondary-aud", for: .audience)
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidNullAlg() async throws {
        try await refuses("fapi2-security-profile-final-client-test-invalid-null-alg", for: .algorithm)
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidAlternateAlg() async throws {
        try await refuses("fapi2-security-profile-final-client-test-invalid-alternate-alg", for: .algorithm)
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidExpiredExp() async throws {
        try await refuses("fapi2-security-profile-final-client-test-invalid-expired-exp", for: .expired)
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidMissingExp() async throws {
        try await refuses("fapi2-security-profile-final-client-test-invalid-missing-exp", for: .expired)
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidMissingAud() async throws {
        try await refuses("fapi2-security-profile-final-client-test-invalid-missing-aud", for: .audience)
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidMissingIss() async throws {
        try await refuses("fapi2-security-profile-final-client-test-invalid-missing-iss", for: .issuer)
    }

    @Test func fapi2SecurityProfileFinalClientTestValidAudAsArray() async throws {
        try await accepts("fapi2-security-profile-final-client-test-valid-aud-as-array")
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidNonce() async throws {
        try await refuses("fapi2-security-profile-final-client-test-invalid-nonce", for: .nonce)
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidMissingNonce() async throws {
        try await refuses("fapi2-security-profile-final-client-test-invalid-missing-nonce", for: .nonce)
    }

    @Test func fapi2SecurityProfileFinalClientTestInvalidAuthorizationResponseIss() async throws {
        try await refusesTheResponse(
            "fapi2-security-profile-final-client-test-invalid-authorization-response-iss", with: .issuerMismatch)
    }

    @Test func fapi2SecurityProfileFinalClientTestRemoveAuthorizationResponseIss() async throws {
        try await refusesTheResponse(
            "fapi2-security-profile-final-client-test-remove-authorization-response-iss", with: .issuerMismatch)
    }

    /// The loopback receiver answers a redirect without the request's state with an error page and
    /// keeps waiting for the real one, so the flow ends at the user agent's deadline, the code
    /// never redeemed.
    @Test(arguments: [
        "fapi2-security-profile-final-client-test-ensure-authorization-response-with-invalid-state-fails",
        "fapi2-security-profile-final-client-test-ensure-authorization-response-with-invalid-missing-state-fails",
    ])
    func fapi2SecurityProfileFinalClientTestEnsureAuthorizationResponseWithInvalidStateFails(module: String)
        async throws
    {
        try await refusesTheResponse(module, with: .timedOut)
    }

    @Test func fapi2SecurityProfileFinalClientTestTokenEndpointResponseWithoutExpiresIn() async throws {
        try await accepts("fapi2-security-profile-final-client-test-token-endpoint-response-without-expires_in")
    }

    @Test func fapi2SecurityProfileFinalClientTestTokenTypeCaseInsensitivity() async throws {
        try await accepts("fapi2-security-profile-final-client-test-token-type-case-insensitivity")
    }

    @Test func fapi2SecurityProfileFinalClientTestRsDpopAuthSchemeCaseInsensitivity() async throws {
        try await accepts("fapi2-security-profile-final-client-test-rs-dpop-auth-scheme-case-insensitivity")
    }

    /// RAR through PAR: the pushed request carries `authorization_details`; the grant comes back.
    @Test func rarAuthorizationDetailsPAR() async throws {
        let client = try await signIn(
            "rar-authorization-details-par", authorizationDetails: [OIDCCRelyingPartyTests.payment])
        let granted = try #require(try client.session.get().token.authorizationDetails)
        #expect(granted.first?.identifier == "grant-0")
        let checks = try await ConformanceProvider.checks(of: client.run)
        for id in ["par-used", "rar-authorization-request", "rar-token-request"] {
            #expect(checks.contains { $0.id == id && $0.status == "SUCCESS" }, "\(id)")
        }
        #expect(!checks.contains { $0.status == "FAILURE" })
    }

    // MARK: JAR (RFC 9101)

    /// The request signed as a request object and sent by value in the browser's URL, with
    /// `authorization_details` inside it.
    @Test func jarRequestObjectByValue() async throws {
        let client = try await signIn(
            "jar-request-object-by-value", authorizationDetails: [OIDCCRelyingPartyTests.payment], requestObject: true,
            pushes: false)
        #expect(try client.session.get().token.authorizationDetails?.first?.identifier == "grant-0")
        let checks = try await ConformanceProvider.checks(of: client.run)
        for id in ["jar-request-object", "rar-authorization-request", "pkce-s256", "nonce-sent"] {
            #expect(checks.contains { $0.id == id && $0.status == "SUCCESS" }, "\(id)")
        }
        #expect(!checks.contains { $0.id == "par-used" })
        #expect(!checks.contains { $0.status == "FAILURE" })
    }

    @Test func jarRequestObjectThroughPAR() async throws {
        let client = try await signIn("jar-request-object-through-par", requestObject: true)
        _ = try client.session.get()
        let checks = try await ConformanceProvider.checks(of: client.run)
        for id in ["jar-request-object", "par-used", "private-key-jwt"] {
            #expect(checks.contains { $0.id == id && $0.status == "SUCCESS" }, "\(id)")
        }
        #expect(!checks.contains { $0.status == "FAILURE" })
    }

    /// A server that accepts only PS256 request objects gets nothing from an ES256 signer.
    @Test func jarRequestObjectAlgorithmNotSupported() async throws {
        let client = try await signIn("jar-request-object-algorithm-not-supported", requestObject: true)
        #expect(throws: CodeFlowError.self) { try client.session.get() }
        if case .failure(let error as CodeFlowError) = client.session {
            #expect(error.code == .invalidConfiguration, "\(error)")
        }
        #expect(!(try await ConformanceProvider.checks(of: client.run)).contains { $0.id == "par-used" })
    }

    // MARK: JARM (signed authorization responses)

    @Test func jarmHappyPath() async throws {
        let client = try await signIn("fapi2-security-profile-final-client-test-happy-path-jarm", signedResponses: true)
        #expect(try client.session.get().claims.subject == "user-1")
        let checks = try await ConformanceProvider.checks(of: client.run)
        #expect(checks.contains { $0.id == "jarm-requested" && $0.status == "SUCCESS" })
        #expect(!checks.contains { $0.status == "FAILURE" })
    }

    /// Each spoiled response is refused for its rule before anything in it is used: the code is
    /// never redeemed.
    @Test(arguments: [
        (
            "fapi2-security-profile-final-client-test-ensure-jarm-with-invalid-iss-fails",
            SignedAuthorizationResponseError.Rule.issuer
        ),
        ("fapi2-security-profile-final-client-test-ensure-jarm-without-iss-fails", .issuer),
        ("fapi2-security-profile-final-client-test-ensure-jarm-with-invalid-aud-fails", .audience),
        ("fapi2-security-profile-final-client-test-ensure-jarm-without-aud-fails", .audience),
        ("fapi2-security-profile-final-client-test-ensure-jarm-with-expired-exp-fails", .expired),
        ("fapi2-security-profile-final-client-test-ensure-jarm-without-exp-fails", .expired),
        ("fapi2-security-profile-final-client-test-ensure-jarm-with-invalid-sig-fails", .signature),
        ("fapi2-security-profile-final-client-test-ensure-jarm-signature-is-not-none", .algorithm),
    ])
    func jarmRefusal(module: String, rule: SignedAuthorizationResponseError.Rule) async throws {
        let client = try await signIn(module, signedResponses: true)
        #expect(throws: SignedAuthorizationResponseError.self) { try client.session.get() }
        if case .failure(let error as SignedAuthorizationResponseError) = client.session {
            #expect(error.rule == rule, "\(error)")
        }
        let checks = try await ConformanceProvider.checks(of: client.run)
        #expect(!checks.contains { $0.id == "pkce-verifier" }, "the code was not redeemed")
    }

    @Test func fapi2SecurityProfileFinalClientTestES256() async throws {
        try await accepts("fapi2-security-profile-final-client-test-es256")
    }

    // MARK: JARM response modes

    /// `form_post.jwt`: the provider answers with a page that posts the signed response to the
    /// loopback receiver, which accepts that `POST` because this flow asked for it.
    @Test func jarmFormPostJWT() async throws {
        let client = try await signIn(
            "fapi2-security-profile-final-client-test-happy-path-jarm", signedResponses: true,
            responseMode: .formPostJWT)
        #expect(try client.session.get().claims.subject == "user-1")
        let checks = try await ConformanceProvider.checks(of: client.run)
        #expect(checks.contains { $0.id == "jarm-requested" && $0.status == "SUCCESS" })
        #expect(!checks.contains { $0.status == "FAILURE" })
    }

    /// A spoiled response posted as a form is refused for its rule like one in the query.
    @Test(arguments: [
        (
            "fapi2-security-profile-final-client-test-ensure-jarm-with-invalid-sig-fails",
            SignedAuthorizationResponseError.Rule.signature
        ), ("fapi2-security-profile-final-client-test-ensure-jarm-with-invalid-aud-fails", .audience),
    ])
    func jarmFormPostJWTRefusal(module: String, rule: SignedAuthorizationResponseError.Rule) async throws {
        let client = try await signIn(module, signedResponses: true, responseMode: .formPostJWT)
        #expect(throws: SignedAuthorizationResponseError.self) { try client.session.get() }
        if case .failure(let error as SignedAuthorizationResponseError) = client.session {
            #expect(error.rule == rule, "\(error)")
        }
        #expect(!(try await ConformanceProvider.checks(of: client.run)).contains { $0.id == "pkce-verifier" })
    }

    /// `fragment.jwt` to an app's custom scheme: the app's URL handler gets the whole redirect URL,
    /// fragment included, and hands it to the agent.
    @Test func jarmFragmentJWTToACustomScheme() async throws {
        let agentBox = Locked<CustomSchemeUserAgent?>(nil)
        let agent = CustomSchemeUserAgent { url in
            let redirect = try await AppRedirectFollower().follow(url)
            #expect(redirect.fragment?.hasPrefix("response=") == true)
            #expect(agentBox.withLock { $0 }?.handleRedirect(redirect) == true)
        }
        agentBox.withLock { $0 = agent }
        let client = try await signIn(
            "fapi2-security-profile-final-client-test-happy-path-jarm", signedResponses: true,
            responseMode: .fragmentJWT, userAgent: agent,
            redirectURI: URL(string: "com.example.app:/oauth")!)
        #expect(try client.session.get().claims.subject == "user-1")
        #expect(!(try await ConformanceProvider.checks(of: client.run)).contains { $0.status == "FAILURE" })
    }

    /// The loopback receiver cannot see a fragment: asking for `fragment.jwt` through it is refused
    /// before the request is pushed.
    @Test func jarmFragmentJWTIsRefusedByTheLoopbackReceiver() async throws {
        let client = try await signIn(
            "fapi2-security-profile-final-client-test-happy-path-jarm", signedResponses: true,
            responseMode: .fragmentJWT)
        #expect(throws: CodeFlowError.self) { try client.session.get() }
        if case .failure(let error as CodeFlowError) = client.session {
            #expect(error.code == .invalidConfiguration, "\(error)")
        }
        #expect(!(try await ConformanceProvider.checks(of: client.run)).contains { $0.id == "par-used" })
    }
}

/// Follows the provider's redirects, as a browser would, until one leaves the web for an app's
/// custom scheme; returns that URL, as the system hands it to the app.
struct AppRedirectFollower {
    struct NoAppRedirect: Error {}

    func follow(_ url: URL) async throws -> URL {
        let transport = URLSessionTransport()
        var next = url
        for _ in 0..<5 {
            let (_, response) = try await transport.send(URLRequest(url: next), options: .init(followsRedirects: false))
            guard let location = response.value(forHTTPHeaderField: "Location"),
                let target = URL(string: location, relativeTo: next)?.absoluteURL
            else { throw NoAppRedirect() }
            if !["http", "https"].contains(target.scheme ?? "") { return target }
            next = target
        }
        throw NoAppRedirect()
    }
}
