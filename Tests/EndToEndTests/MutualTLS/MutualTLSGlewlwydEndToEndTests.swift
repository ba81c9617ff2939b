#if AsyncHTTPClient
    import AsyncHTTPClientTransport
    import AuthenticatedRequests
    import Foundation
    import OAuthFlows
    import Testing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The glewlwyd of `start_glewlwyd_mtls`, behind nginx (`AUTHREQ_TEST_GLEWLWYD_MTLS`).
    enum GlewlwydMTLS {
        /// What `Tests/Glewlwyd/provision.py` wrote for this glewlwyd.
        struct Setup: Decodable {
            struct Client: Decodable {
                let client_id: String
            }
            let issuer: String
            let clients: [String: Client]
        }

        static let setupFile = ProcessInfo.processInfo.environment["AUTHREQ_TEST_GLEWLWYD_MTLS"]
        static let setup: Setup? = setupFile.flatMap { try? Data(contentsOf: URL(fileURLWithPath: $0)) }.flatMap {
            try? JSONDecoder().decode(Setup.self, from: $0)
        }

        /// nginx's log of this glewlwyd: `METHOD PATH FINGERPRINT` a line.
        static var accessLog: URL {
            get throws {
                try #require(setupFile.map { URL(fileURLWithPath: $0).deletingLastPathComponent() })
                    .appendingPathComponent("access.log")
            }
        }

        /// How many requests reached `path` (under the plugin's prefix) through nginx.
        static func requests(to path: String) throws -> Int {
            let log = (try? String(contentsOf: try accessLog, encoding: .utf8)) ?? ""
            return log.split(separator: "\n").filter {
                $0.split(separator: " ").dropFirst().first == "/api/oidc/\(path)"
            }
            .count
        }

        /// ``requests(to:)`` once it reaches `expected`, or after 3 s: nginx writes a request's log
        /// line after sending its response, so a loaded machine may show it a moment later.
        static func requests(to path: String, expecting expected: Int) async throws -> Int {
            let deadline = Date().addingTimeInterval(3)
            var count = try requests(to: path)
            while count < expected, Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
                count = try requests(to: path)
            }
            return count
        }
    }

    /// Mutual TLS (RFC 8705) against glewlwyd (Debian's 2.7.5), behind nginx as its documentation
    /// describes (`Scripts/glewlwyd.sh`, `start_glewlwyd_mtls`): its OpenID Connect plugin
    /// authenticates clients by the forwarded certificate at its `/mtls/` aliases and issues JWT
    /// access tokens whose `cnf.x5t#S256` the SDK reads and checks. One test at a time: they
    /// count requests in nginx's one log.
    @Suite(.serialized, .enabled(if: GlewlwydMTLS.setup != nil && TestPKI.isConfigured))
    struct MutualTLSGlewlwydEndToEndTests {
        func metadata(over transport: any HTTPTransport) async throws -> AuthorizationServerMetadata {
            let setup = try #require(GlewlwydMTLS.setup)
            return try await AuthorizationServerMetadata.discover(
                issuer: try #require(URL(string: setup.issuer)), document: .openIDConfiguration,
                context: AuthenticationContext(transport: transport))
        }

        /// The claims of a JWT access token, read without verifying it.
        func claims(of token: OAuthToken) throws -> [String: Any] {
            let parts = token.accessToken.split(separator: ".")
            try #require(parts.count == 3)
            let data = try #require(Base64URL.decode(parts[1]))
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }

        @Test(arguments: ["tls", "self-signed"])
        func glewlwydAuthenticatesTheCertificateAtItsAliasAndBindsTheJWT(client name: String) async throws {
            let setup = try #require(GlewlwydMTLS.setup)
            let id = try #require(setup.clients[name]).client_id
            let certificate: TestPKI.Certificate = name == "tls" ? .clientA : .selfSigned
            let client: ClientAuthentication =
                name == "tls" ? .tlsClientAuth(id: id) : .selfSignedTLSClientAuth(id: id)
            let transport = try TestPKI.transport(presenting: try TestPKI.identity(certificate))
            let metadata = try await metadata(over: transport)
            #expect(metadata.mtlsEndpointAliases["token_endpoint"] != nil)
            #expect(metadata.tokenEndpointAuthMethodsSupported.contains(client.methodName))
            let aliasBefore = try GlewlwydMTLS.requests(to: "mtls/token")
            let plainBefore = try GlewlwydMTLS.requests(to: "token")

            let token = try await metadata.clientCredentialsFlow(client: client, scope: "payments").obtainToken(
                for: AuthenticationContext(transport: transport))

            let confirmation = try #require(try claims(of: token)["cnf"] as? [String: Any])
            #expect(confirmation["x5t#S256"] as? String == (try TestPKI.thumbprint(certificate)))
            #expect(token.certificateThumbprint == (try TestPKI.thumbprint(certificate)))
            #expect(
                try await GlewlwydMTLS.requests(to: "mtls/token", expecting: aliasBefore + 1) == aliasBefore + 1,
                "the token request went to the alias")
            #expect(try GlewlwydMTLS.requests(to: "token") == plainBefore, "and not to the plain token endpoint")
        }

        @Test func aRotatedCertificateGetsATokenBoundToTheNewOne() async throws {
            let setup = try #require(GlewlwydMTLS.setup)
            let id = try #require(setup.clients["tls"]).client_id
            let (folder, identity) = try TestPKI.rotatableCopy(of: .clientA)
            defer { try? FileManager.default.removeItem(at: folder) }
            let transport = try TestPKI.transport(presenting: identity)
            let metadata = try await metadata(over: transport)
            let authenticator = OAuthAuthenticator(
                flow: try metadata.clientCredentialsFlow(client: .tlsClientAuth(id: id), scope: "payments"),
                configuration: .init(tokenTransport: transport))
            // Any URL of the server serves as the request the token rides on: the point is what the
            // SDK does before sending it.
            let page = try #require(URL(string: setup.issuer + "/.well-known/openid-configuration"))
            _ = try await authenticator.send(URLRequest(url: page), over: transport)
            let first = try #require(try await authenticator.currentCredential())
            #expect(
                (try claims(of: first)["cnf"] as? [String: Any])?["x5t#S256"] as? String
                    == (try TestPKI.thumbprint(.clientA)))

            let before = try GlewlwydMTLS.requests(to: "mtls/token")
            try TestPKI.rotate(folder, to: .clientB)
            _ = try await authenticator.send(URLRequest(url: page), over: transport)
            let second = try #require(try await authenticator.currentCredential())
            #expect(second.accessToken != first.accessToken)
            #expect(
                (try claims(of: second)["cnf"] as? [String: Any])?["x5t#S256"] as? String
                    == (try TestPKI.thumbprint(.clientB)))
            #expect(
                try await GlewlwydMTLS.requests(to: "mtls/token", expecting: before + 1) == before + 1,
                "one token request over the new certificate")
        }

        @Test(arguments: [TestPKI.Certificate.otherCA, .expired])
        func aCertificateTheTerminatorRefusesIsReportedOnce(certificate: TestPKI.Certificate) async throws {
            let setup = try #require(GlewlwydMTLS.setup)
            let id = try #require(setup.clients["tls"]).client_id
            let good = try TestPKI.transport(presenting: try TestPKI.identity(.clientA))
            let metadata = try await metadata(over: good)
            let transport = try TestPKI.transport(presenting: try TestPKI.identity(certificate))
            let before = try GlewlwydMTLS.requests(to: "mtls/token")
            let error = await #expect(throws: TokenEndpointError.self) {
                _ = try await metadata.clientCredentialsFlow(client: .tlsClientAuth(id: id), scope: "payments")
                    .obtainToken(for: AuthenticationContext(transport: transport))
            }
            #expect(error?.code == .unexpectedStatus || error?.code == .invalidResponse, "\(String(describing: error))")
            #expect(
                try await GlewlwydMTLS.requests(to: "mtls/token", expecting: before + 1) == before + 1,
                "sent once, not retried")
        }
    }
#endif
