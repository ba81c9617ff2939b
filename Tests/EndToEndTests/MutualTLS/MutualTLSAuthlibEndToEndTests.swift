#if AsyncHTTPClient
    import AsyncHTTPClientTransport
    import AuthenticatedRequests
    import Foundation
    import OAuthFlows
    import Testing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// Mutual TLS (RFC 8705) against the Authlib server with its RFC 8705 shim
    /// (Tests/AuthorizationServer/mtls.py) behind nginx, over real TLS on loopback with the test
    /// PKI: client authentication by certificate, the aliases, bound tokens at a resource that
    /// checks `x5t#S256`, rotation.
    @Suite(.enabled(if: TestAuthorizationServer.isConfigured && TestPKI.isConfigured))
    struct MutualTLSAuthlibEndToEndTests {
        /// The TLS terminator's origin (`AUTHREQ_TEST_SERVER_MTLS`): the aliases and the resource.
        static var terminator: URL {
            get throws {
                try #require(
                    ProcessInfo.processInfo.environment["AUTHREQ_TEST_SERVER_MTLS"].flatMap(URL.init(string:)),
                    "AUTHREQ_TEST_SERVER_MTLS is not set: run Scripts/test")
            }
        }

        static var resource: URL { get throws { try terminator.appendingPathComponent("mtls/resource") } }

        func makeClient(_ body: [String: Any]) async throws -> String {
            let reply = try await TestAuthorizationServer.json("test/clients", method: "POST", body: body)
            #expect(reply["client_secret"] is NSNull, "a mutual-TLS client has no secret")
            return try #require(reply["client_id"] as? String)
        }

        /// The requests the server counted for client `id` by endpoint: `mtls:/token` through the
        /// terminator, `plain:/token` at the plain port.
        func stats(_ id: String) async throws -> [String: Int] {
            try await TestAuthorizationServer.json("test/stats/endpoints:\(id)").compactMapValues { $0 as? Int }
        }

        /// The server's counts for client `id` by grant type.
        func grants(_ id: String) async throws -> [String: Int] {
            try await TestAuthorizationServer.json("test/stats/\(id)").compactMapValues { $0 as? Int }
        }

        func authenticator(_ flow: any OAuthFlow, transport: any HTTPTransport) -> OAuthAuthenticator {
            OAuthAuthenticator(flow: flow, configuration: .init(tokenTransport: transport))
        }

        /// Sends a GET to the bound resource through `authenticator` over `transport`.
        func fetchResource(_ authenticator: OAuthAuthenticator, over transport: any HTTPTransport) async throws
            -> (status: Int, x5t: String?)
        {
            let (body, head) = try await authenticator.send(URLRequest(url: try Self.resource), over: transport)
            let json = try JSONSerialization.jsonObject(with: body) as? [String: Any]
            return (head.statusCode, json?["x5t"] as? String)
        }

        @Test(arguments: ["tls_client_auth", "self_signed_tls_client_auth"])
        func aCertificateAuthenticatesTheClientThroughTheAliasesAndBindsItsToken(method: String) async throws {
            let certificate: TestPKI.Certificate = method == "tls_client_auth" ? .clientA : .selfSigned
            let id =
                method == "tls_client_auth"
                ? try await makeClient(["tls_client_auth_subject_dn": TestPKI.clientSubjectDN])
                : try await makeClient([
                    "self_signed_tls_client_auth": true,
                    "jwks": ["keys": [["kty": "EC", "x5c": [try TestPKI.der(.selfSigned).base64EncodedString()]]]],
                ])
            let client: ClientAuthentication =
                method == "tls_client_auth" ? .tlsClientAuth(id: id) : .selfSignedTLSClientAuth(id: id)
            #expect(client.methodName == method)
            let metadata = try await TestAuthorizationServer.metadata()
            let transport = try TestPKI.transport(presenting: try TestPKI.identity(certificate))
            #expect(try transport.clientCertificateThumbprint() == TestPKI.thumbprint(certificate))
            let authenticator = authenticator(try metadata.clientCredentialsFlow(client: client), transport: transport)

            let answer = try await fetchResource(authenticator, over: transport)
            #expect(answer.status == 200)
            #expect(answer.x5t == (try TestPKI.thumbprint(certificate)), "the resource saw the token's certificate")
            let token = try #require(try await authenticator.currentCredential())
            #expect(token.certificateThumbprint == (try TestPKI.thumbprint(certificate)))
            #expect(token.isBearer)

            // Introspection and revocation go to their aliases too; introspection says the binding.
            let context = AuthenticationContext(transport: transport)
            let introspection = try await metadata.introspectionEndpoint(client: client).introspect(
                token.accessToken, context: context)
            #expect(introspection.isActive)
            #expect(introspection.certificateThumbprint == token.certificateThumbprint)
            try await metadata.revocationEndpoint(client: client).revoke(token.accessToken, context: context)

            let counts = try await stats(id)
            #expect(counts["mtls:/token"] == 1, "\(counts)")
            #expect(counts["mtls:/introspect"] == 1, "\(counts)")
            #expect(counts["mtls:/revoke"] == 1, "\(counts)")
            #expect(counts.keys.allSatisfy { !$0.hasPrefix("plain:") }, "nothing went to a plain endpoint: \(counts)")
        }

        @Test func aClientWithoutMutualTLSKeepsThePlainEndpoints() async throws {
            let client = try await TestAuthorizationServer.makeClient()
            let metadata = try await TestAuthorizationServer.metadata()
            #expect(try metadata.tokenEndpoint(client: client.basic).url == TestAuthorizationServer.tokenEndpoint)
            let bound = client.basic.usingMutualTLS()
            #expect(try metadata.tokenEndpoint(client: bound).url == Self.terminator.appendingPathComponent("token"))
        }

        @Test func aBoundTokenIsRefusedWithAnotherCertificate() async throws {
            let id = try await makeClient(["tls_client_auth_subject_dn": TestPKI.clientSubjectDN])
            let metadata = try await TestAuthorizationServer.metadata()
            let transportA = try TestPKI.transport(presenting: try TestPKI.identity(.clientA))
            let authenticator = authenticator(
                try metadata.clientCredentialsFlow(client: .tlsClientAuth(id: id)), transport: transportA)
            #expect(try await fetchResource(authenticator, over: transportA).status == 200)
            let token = try #require(try await authenticator.currentCredential())

            // The resource checks the binding: the same token with client B's certificate is refused.
            let transportB = try TestPKI.transport(presenting: try TestPKI.identity(.clientB))
            var stolen = URLRequest(url: try Self.resource)
            stolen.setValue("Bearer \(token.accessToken)", forHTTPHeaderField: "Authorization")
            let (_, refused) = try await transportB.send(stolen)
            #expect(refused.statusCode == 401)
            let (_, accepted) = try await transportA.send(stolen)
            #expect(accepted.statusCode == 200)

            // The SDK never sends it there: over B it refreshes on the token transport (which
            // presents A, so the new token is bound to A again) and reports the mismatch.
            let before = try await TestAuthorizationServer.json("test/stats/mtls:resource:\(id)")
            await #expect(throws: AuthenticationError.self) {
                _ = try await authenticator.send(URLRequest(url: try Self.resource), over: transportB)
            }
            do {
                _ = try await authenticator.send(URLRequest(url: try Self.resource), over: transportB)
            } catch let error as AuthenticationError {
                #expect(error.code == .certificateMismatch)
            }
            let after = try await TestAuthorizationServer.json("test/stats/mtls:resource:\(id)")
            #expect(after["refused"] as? Int == before["refused"] as? Int, "the mismatched token was not sent")
        }

        @Test func aRotatedCertificateFileBindsTheNextTokenToTheNewCertificate() async throws {
            let id = try await makeClient(["tls_client_auth_subject_dn": TestPKI.clientSubjectDN])
            let metadata = try await TestAuthorizationServer.metadata()
            let (folder, identity) = try TestPKI.rotatableCopy(of: .clientA)
            defer { try? FileManager.default.removeItem(at: folder) }
            let transport = try TestPKI.transport(presenting: identity)
            let authenticator = authenticator(
                try metadata.clientCredentialsFlow(client: .tlsClientAuth(id: id)), transport: transport)
            let first = try await fetchResource(authenticator, over: transport)
            #expect(first.status == 200)
            #expect(first.x5t == (try TestPKI.thumbprint(.clientA)))

            let before = try await TestAuthorizationServer.json("test/stats/mtls:resource:\(id)")
            try TestPKI.rotate(folder, to: .clientB)
            #expect(try transport.clientCertificateThumbprint() == TestPKI.thumbprint(.clientB))
            let second = try await fetchResource(authenticator, over: transport)
            #expect(second.status == 200, "the resource accepted the token issued over the new certificate")
            #expect(second.x5t == (try TestPKI.thumbprint(.clientB)))
            let token = try #require(try await authenticator.currentCredential())
            #expect(token.certificateThumbprint == (try TestPKI.thumbprint(.clientB)))
            let counts = try await stats(id)
            #expect(counts["mtls:/token"] == 2, "one token per certificate: \(counts)")
            let after = try await TestAuthorizationServer.json("test/stats/mtls:resource:\(id)")
            #expect(
                after["refused"] as? Int == before["refused"] as? Int,
                "the token bound to the old certificate was refreshed before it was sent, not sent and refused")
        }

        @Test(arguments: [TestPKI.Certificate.expired, .otherCA])
        func aCertificateTheServerRefusesIsATypedErrorSentOnce(certificate: TestPKI.Certificate) async throws {
            let id = try await makeClient(["tls_client_auth_subject_dn": TestPKI.clientSubjectDN])
            let metadata = try await TestAuthorizationServer.metadata()
            let transport = try TestPKI.transport(presenting: try TestPKI.identity(certificate))
            let flow = try metadata.clientCredentialsFlow(client: .tlsClientAuth(id: id))
            let authenticator = authenticator(flow, transport: transport)
            let error = await #expect(throws: AuthenticationError.self) {
                _ = try await fetchResource(authenticator, over: transport)
            }
            #expect(error?.code == .obtainFailed, "\(String(describing: error))")
            // nginx refuses an expired certificate itself (400); the shim refuses one from another CA.
            let counts = try await stats(id)
            #expect((counts["mtls:/token"] ?? 0) <= 1, "one token request at most, no loop: \(counts)")
            #expect(try await grants(id)["client_credentials"] ?? 0 <= 1)
        }

        /// `authreq` with `--client-certificate`/`--client-key`: the sign-in at the token alias,
        /// a fetch of the bound resource presenting the certificate, and no key in its files.
        @Test func authreqSignsInWithItsCertificateAndFetchesTheBoundResource() async throws {
            let tool = try AuthreqTool()
            defer { tool.removeHome() }
            let id = try await makeClient(["tls_client_auth_subject_dn": TestPKI.clientSubjectDN])
            let login = try await tool.run([
                "login", "--client-credentials", "--profile", "mtls", "--issuer",
                try TestAuthorizationServer.base.absoluteString, "--client-id", id, "--client-auth", "tls_client_auth",
                "--client-certificate", try TestPKI.certificateFile(.clientA).path,
                "--client-key", try TestPKI.keyFile(.clientA).path, "--ca-file", try TestPKI.file("ca.pem").path,
            ])
            #expect(login.status == 0, "\(login.stderr)")
            let fetch = try await tool.run(["fetch", "--profile", "mtls", try Self.resource.absoluteString])
            #expect(fetch.status == 0, "\(fetch.stderr)")
            #expect(fetch.stdout.contains(try TestPKI.thumbprint(.clientA)), "the resource saw the certificate")
            let counts = try await stats(id)
            #expect(counts["mtls:/token"] == 1, "\(counts)")
            #expect(counts["plain:/token"] == nil)

            let key = try String(contentsOf: try TestPKI.keyFile(.clientA), encoding: .utf8)
                .split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
            let configuration = try String(contentsOf: tool.configurationFile, encoding: .utf8)
            let status = try await tool.run(["status", "--profile", "mtls", "--json"])
            for text in [configuration, login.stderr, fetch.stderr, status.stdout, status.stderr] {
                #expect(!text.contains(key.prefix(32)), "the key appears nowhere")
            }
            #expect(configuration.contains(#""client_certificate""#))
        }

        @Test func mutualTLSWithATransportWithoutACertificateSendsNothing() async throws {
            let id = try await makeClient(["tls_client_auth_subject_dn": TestPKI.clientSubjectDN])
            let metadata = try await TestAuthorizationServer.metadata()
            let transport = try TestPKI.transport(presenting: nil)
            let flow = try metadata.clientCredentialsFlow(client: .tlsClientAuth(id: id))
            let error = await #expect(throws: TokenEndpointError.self) {
                _ = try await flow.obtainToken(for: AuthenticationContext(transport: transport))
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.description.contains("AsyncHTTPClientTransport(clientIdentity:)") == true)
            #expect(try await stats(id).isEmpty, "nothing reached the server")
        }
    }
#endif
