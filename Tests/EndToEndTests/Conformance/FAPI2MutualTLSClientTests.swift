#if AsyncHTTPClient
    import AsyncHTTPClientTransport
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

    /// The FAPI 2.0 Security Profile's client test modules (OpenID Foundation, `fapi2spfinal`) in
    /// the variant `client_auth_type=mtls, sender_constrain=mtls`, and the OIDCC client test in
    /// `client_auth_type=mtls`, ported: the conformance provider serves PAR, token, UserInfo and a
    /// resource on a TLS listener that requires the client's certificate (the test PKI's), lists
    /// them as `mtls_endpoint_aliases`, authenticates the client by `tls_client_auth` and binds
    /// bearer tokens to the certificate. One case per module, named by it.
    @Suite(.enabled(if: ConformanceProvider.isConfigured && TestPKI.isConfigured, ConformanceProvider.notRunReason))
    struct FAPI2MutualTLSClientTests {
        typealias Run = ConformanceProvider.Run

        struct Client {
            let run: Run
            let transport: AsyncHTTPClientTransport
            let authenticator: OAuthAuthenticator
            let session: Result<OpenIDSession, any Error>
        }

        static func start(_ module: String, presenting certificate: TestPKI.Certificate = .clientA) async throws -> Run
        {
            let pem = try String(contentsOf: try TestPKI.certificateFile(certificate), encoding: .utf8)
            let tls = [
                "certificate": try TestPKI.file("server.pem").path, "key": try TestPKI.file("server-key.pem").path,
                "trust": try TestPKI.file("client-trust.pem").path,
            ]
            return try await ConformanceProvider.start(module, mutualTLS: (pem, tls))
        }

        /// Signs in with `tls_client_auth` over a transport presenting `certificate`.
        func signIn(
            _ module: String, presenting certificate: TestPKI.Certificate = .clientA, pushes: Bool = true,
            timeout: TimeInterval = 30
        ) async throws -> Client {
            let run = try await Self.start(module)
            let transport = try TestPKI.transport(presenting: try TestPKI.identity(certificate))
            let context = AuthenticationContext(transport: transport)
            let provider = try await OpenIDProvider.discover(
                issuer: run.issuerURL, minimumKeyRefetchInterval: 0, context: context)
            let oidc = OpenIDClient(provider: provider, client: .tlsClientAuth(id: run.client_id))
            let authenticator = OAuthAuthenticator(
                store: InMemoryTokenStore(), configuration: .init(tokenTransport: transport))
            let session = await Result {
                try await oidc.signIn(
                    redirectURI: ResourceSignInRedirect.uri, scope: "openid",
                    userAgent: LoopbackUserAgent(opener: BrowserSimulator(), timeout: timeout),
                    configuring: authenticator, pushesAuthorizationRequests: pushes)
            }
            return Client(run: run, transport: transport, authenticator: authenticator, session: session)
        }

        func resource(of run: Run) throws -> URL {
            try #require(run.mtls_url.flatMap(URL.init(string:))).appendingPathComponent("resource")
        }

        /// The ids of the checks the provider saw fail.
        func failures(in checks: [ConformanceProvider.Check]) -> [String] {
            checks.filter { $0.status == "FAILURE" }.map(\.id)
        }

        /// The sign-in succeeds with the certificate at PAR and the token endpoint (their aliases),
        /// the bound token is accepted at the resource with the certificate, and no check failed.
        @discardableResult
        func accepts(_ module: String, pushes: Bool = true, sourceLocation: SourceLocation = #_sourceLocation)
            async throws -> Client
        {
            let client = try await signIn(module, pushes: pushes)
            let session = try client.session.get()
            #expect(session.claims.subject == "user-1", sourceLocation: sourceLocation)
            let token = try #require(try await client.authenticator.currentCredential())
            #expect(token.certificateThumbprint == (try TestPKI.thumbprint(.clientA)), sourceLocation: sourceLocation)
            #expect(token.isBearer, sourceLocation: sourceLocation)
            let (_, head) = try await client.authenticator.send(
                URLRequest(url: try resource(of: client.run)), over: client.transport)
            #expect(head.statusCode == 200, sourceLocation: sourceLocation)
            let checks = try await ConformanceProvider.checks(of: client.run)
            #expect(failures(in: checks).isEmpty, "\(checks)", sourceLocation: sourceLocation)
            for id in ["tls-client-auth", "mtls-token-request", "resource-mtls-binding", "pkce-s256"]
                + (pushes ? ["par-used"] : [])
            {
                #expect(
                    checks.contains { $0.id == id && $0.status == "SUCCESS" }, "\(id)", sourceLocation: sourceLocation)
            }
            #expect(!checks.contains { $0.id.hasPrefix("dpop") || $0.id == "private-key-jwt" })
            return client
        }

        @Test(arguments: [
            "fapi2-security-profile-final-client-test-happy-path",
            "fapi2-security-profile-final-client-test-valid-aud-as-array",
            "fapi2-security-profile-final-client-test-token-endpoint-response-without-expires_in",
            "fapi2-security-profile-final-client-test-es256",
        ])
        func fapi2SecurityProfileFinalClientTestMTLS(acceptedModule module: String) async throws {
            try await accepts(module)
        }

        @Test(arguments: [
            ("fapi2-security-profile-final-client-test-invalid-iss", IDTokenValidationError.Rule.issuer),
            ("fapi2-security-profile-final-client-test-invalid-aud", .audience),
            ("fapi2-security-profile-final-client-test-invalid-secondary-aud", .audience),
            ("fapi2-security-profile-final-client-test-invalid-null-alg", .algorithm),
            ("fapi2-security-profile-final-client-test-invalid-alternate-alg", .algorithm),
            ("fapi2-security-profile-final-client-test-invalid-expired-exp", .expired),
            ("fapi2-security-profile-final-client-test-invalid-missing-exp", .expired),
            ("fapi2-security-profile-final-client-test-invalid-missing-aud", .audience),
            ("fapi2-security-profile-final-client-test-invalid-missing-iss", .issuer),
            ("fapi2-security-profile-final-client-test-invalid-nonce", .nonce),
            ("fapi2-security-profile-final-client-test-invalid-missing-nonce", .nonce),
        ])
        func fapi2SecurityProfileFinalClientTestMTLS(refusedModule module: String, rule: IDTokenValidationError.Rule)
            async throws
        {
            let client = try await signIn(module)
            #expect(throws: IDTokenValidationError.self) { try client.session.get() }
            if case .failure(let error as IDTokenValidationError) = client.session {
                #expect(error.rule == rule, "\(error)")
            }
            #expect(try await client.authenticator.currentCredential() == nil)
            let checks = try await ConformanceProvider.checks(of: client.run)
            #expect(checks.contains { $0.id == "tls-client-auth" && $0.status == "SUCCESS" })
        }

        @Test(arguments: [
            "fapi2-security-profile-final-client-test-invalid-authorization-response-iss",
            "fapi2-security-profile-final-client-test-remove-authorization-response-iss",
        ])
        func fapi2SecurityProfileFinalClientTestMTLS(refusedResponseModule module: String) async throws {
            let client = try await signIn(module, timeout: 3)
            #expect(throws: CodeFlowError.self) { try client.session.get() }
            if case .failure(let error as CodeFlowError) = client.session {
                #expect(error.code == .issuerMismatch, "\(error)")
            }
            #expect(!(try await ConformanceProvider.checks(of: client.run)).contains { $0.id == "pkce-verifier" })
        }

        /// OIDCC's client test in `client_auth_type=mtls`: a code flow with `tls_client_auth` at the
        /// token alias, and UserInfo at its alias with the certificate-bound token.
        @Test func oidccClientTestMTLS() async throws {
            let client = try await signIn("oidcc-client-test", pushes: false)
            let session = try client.session.get()
            let oidc = OpenIDClient(
                provider: try await OpenIDProvider.discover(
                    issuer: client.run.issuerURL, context: AuthenticationContext(transport: client.transport)),
                client: .tlsClientAuth(id: client.run.client_id))
            let info = try await oidc.userInfo(using: client.authenticator)
            #expect(info.subject == session.claims.subject)
            let checks = try await ConformanceProvider.checks(of: client.run)
            #expect(failures(in: checks).isEmpty, "\(checks)")
            for id in ["tls-client-auth", "mtls-token-request", "userinfo-mtls-binding"] {
                #expect(checks.contains { $0.id == id && $0.status == "SUCCESS" }, "\(id)")
            }
        }

        /// The resource refuses the bound token with another certificate (the SDK itself never sends
        /// it so: it reports `certificateMismatch`).
        @Test func aBoundTokenIsRefusedAtTheResourceWithAnotherCertificate() async throws {
            let client = try await accepts("fapi2-security-profile-final-client-test-happy-path")
            let token = try #require(try await client.authenticator.currentCredential())
            let other = try TestPKI.transport(presenting: try TestPKI.identity(.clientB))
            var stolen = URLRequest(url: try resource(of: client.run))
            stolen.setValue("Bearer \(token.accessToken)", forHTTPHeaderField: "Authorization")
            let (_, head) = try await other.send(stolen)
            #expect(head.statusCode == 401)
            let checks = try await ConformanceProvider.checks(of: client.run)
            #expect(checks.contains { $0.id == "resource-mtls-binding" && $0.status == "FAILURE" })
        }

        /// A certificate the server's TLS refuses (expired, or from another CA) fails the handshake:
        /// a typed TLS error, after one handshake, nothing retried.
        @Test(arguments: [TestPKI.Certificate.expired, .otherCA])
        func aCertificateTheTLSListenerRefusesIsATLSFailureAfterOneHandshake(certificate: TestPKI.Certificate)
            async throws
        {
            let run = try await Self.start("oidcc-client-test")
            let transport = try TestPKI.transport(presenting: try TestPKI.identity(certificate))
            let metadata = try await AuthorizationServerMetadata.discover(
                issuer: run.issuerURL, document: .openIDConfiguration,
                context: AuthenticationContext(transport: transport))
            let endpoint = try metadata.tokenEndpoint(client: .tlsClientAuth(id: run.client_id))
            #expect(endpoint.url.absoluteString.hasPrefix(try #require(run.mtls_url)))
            let error = await #expect(throws: HTTPTransportError.self) {
                _ = try await endpoint.requestToken(
                    grantType: "client_credentials", context: AuthenticationContext(transport: transport))
            }
            #expect(error?.code == .tlsFailed, "\(String(describing: error))")
            let checks = try await ConformanceProvider.checks(of: run)
            let refused = checks.first { $0.id == "tls-handshake-refused" }
            #expect(refused?.description == "1 TLS handshakes refused", "\(checks)")
            #expect(!checks.contains { $0.id == "tls-client-auth" }, "no request got through")
        }
    }
#endif
