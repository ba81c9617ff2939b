#if MCP
    import AuthenticatedRequests
    import CodeFlowOAuth
    import Crypto
    import Foundation
    import JWTKit
    import MCP
    import MCPAuthentication
    import OAuthFlows
    import OpenIDConnect
    @testable import ReadmeSnippets
    import ResourceDiscovery
    import TestSupport
    import Testing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// Every Swift block of DocC's "Agents and workloads" article (`Examples/ReadmeSnippets/DocC/
    /// Agents*.swift`, byte-identical to the article's blocks) run against the project's test
    /// servers: Authlib (JWT bearer, client credentials with `private_key_jwt` held to RFC 10070,
    /// the ID-JAG), idpyoidc (token exchange, the enterprise's sign-in and its ID-JAG) and the MCP
    /// Python SDK's server as the MCP resource.
    @Suite(.enabled(if: TestMCPResourceServer.isConfigured, TestMCPResourceServer.notRunReason))
    struct AgentsArticleEndToEndTests {
        typealias Server = TestAuthorizationServer

        /// A resource of the Authlib server that accepts tokens issued for it.
        func resource() throws -> URL {
            try Server.base.appendingPathComponent("rs/agents-\(UUID().uuidString.prefix(8).lowercased())")
        }

        struct Probe: AuthenticatedResource {
            typealias Output = Data
            let authenticator: any RequestAuthenticator
            let url: URL
            func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
        }

        @Test func aPlatformsTokenWithNoClientAuthentication() async throws {
            let platform = JWTBearerEndToEndTests.Platform()
            let client = try await platform.register()
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("workload-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: file) }
            try await platform.token(for: "job-1").write(to: file, atomically: true, encoding: .utf8)
            let resource = try resource()
            let authenticator = workloadAuthenticator(
                tokenEndpoint: try Server.tokenEndpoint, tokenFile: file, resource: resource)
            _ = try await Probe(authenticator: authenticator, url: resource).request()
            #expect(try await Server.tokenRequests(client)["jwt-bearer sub:job-1"] == 1)
        }

        @Test func anAssertionTheAgentSigns() async throws {
            let key = ES256PrivateKey()
            let parameters = try #require(key.publicKey.parameters)
            let reply = try await Server.json(
                "test/clients", method: "POST",
                body: [
                    "public": true, "workload_issuer": "reports-agent", "access_token_lifetime": 300,
                    "workload_jwk": ["kty": "EC", "crv": "P-256", "x": parameters.x, "y": parameters.y],
                ])
            let client = Server.Client(id: try #require(reply["client_id"] as? String), secret: nil)
            let flow = try agentFlow(tokenEndpoint: try Server.tokenEndpoint, pem: key.pemRepresentation, user: "alice")
            let token = try await flow.obtainToken(
                for: AuthenticationContext(transport: URLSessionTransport(), allowsInsecureHTTP: true))
            #expect(!token.accessToken.isEmpty)
            #expect(try await Server.tokenRequests(client)["jwt-bearer sub:alice"] == 1)
        }

        @Test func onAUsersBehalf() async throws {
            let made = try await IdpyoidcProvider.plain.makeClient(tokenExchange: true)
            let provider = try await OpenIDProvider.discover(issuer: try IdpyoidcProvider.plain.base)
            let oidc = OpenIDClient(provider: provider, client: .clientSecretBasic(id: made.id, secret: made.secret))
            let user = OAuthAuthenticator(store: InMemoryTokenStore())
            _ = try await oidc.signIn(
                redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "openid profile email offline_access",
                request: OpenIDAuthenticationRequest(prompt: "consent"),
                userAgent: LoopbackUserAgent(opener: CookieBrowser(), timeout: 30), configuring: user)
            let service = onBehalfOf(
                user: user, tokenEndpoint: try #require(provider.metadata.tokenEndpoint), clientID: made.id,
                secret: made.secret)
            let exchanged = try await service.validCredential()
            let userToken = try #require(try await user.currentCredential())
            #expect(exchanged.accessToken != userToken.accessToken)
            #expect(exchanged.isAccessToken)
        }

        /// Calls the MCP server's `add` tool through `authorizer`.
        func add(through authorizer: MCPAuthorizer) async throws -> String {
            let client = MCP.Client(name: "agents-article", version: "1.0")
            _ = try await client.connect(transport: authorizer.makeTransport(streaming: false))
            defer { Task { await client.disconnect() } }
            let (content, _) = try await client.callTool(name: "add", arguments: ["a": 20, "b": 22])
            return content.map { "\($0)" }.joined()
        }

        @Test func theEnterprisesSignInThenTheMCPServer() async throws {
            let enterprise = try await MCPMachineEndToEndTests.Enterprise()
            let tokens = FileManager.default.temporaryDirectory.appendingPathComponent("agents-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: tokens) }
            let authorizer = try await enterpriseAuthorizer(
                server: try TestMCPResourceServer.endpoint, serverIssuer: try Server.base.absoluteString,
                agent: .clientSecretBasic(id: enterprise.client.id, secret: try #require(enterprise.client.secret)),
                enterprise: try IdpyoidcProvider.plain.base,
                enterpriseClient: .clientSecretBasic(id: enterprise.provider.id, secret: enterprise.provider.secret),
                tokens: tokens, userAgent: LoopbackUserAgent(opener: CookieBrowser(), timeout: 30))
            #expect(try await add(through: authorizer).contains("42"))
            // The next launch restores the enterprise session: no browser (this one fails if opened).
            let again = try await enterpriseAuthorizer(
                server: try TestMCPResourceServer.endpoint, serverIssuer: try Server.base.absoluteString,
                agent: .clientSecretBasic(id: enterprise.client.id, secret: try #require(enterprise.client.secret)),
                enterprise: try IdpyoidcProvider.plain.base,
                enterpriseClient: .clientSecretBasic(id: enterprise.provider.id, secret: enterprise.provider.secret),
                tokens: tokens, userAgent: LoopbackUserAgent(opener: FailingOpener(), timeout: 5))
            #expect(try await add(through: again).contains("42"))
        }

        struct FailingOpener: BrowserOpener {
            func open(_ url: URL) async throws { throw CancellationError() }
        }

        @Test func aCIJobsTokenWithNoClientAuthentication() async throws {
            let platform = JWTBearerEndToEndTests.Platform()
            let client = try await platform.register()
            let jobToken = try await platform.token(for: "ci-job")
            // The runner's token service: the job's token for the request token it handed out.
            let runner = try await LoopbackHTTPServer { request in
                // The runner's scheme is written `bearer` (as GitHub's toolkit sends it); compared as a scheme.
                guard request.header("Authorization")?.lowercased() == "bearer runner-request-token" else {
                    return .init(status: 401)
                }
                return .init(headers: [("Content-Type", "application/json")], body: #"{"value":"\#(jobToken)"}"#)
            }
            defer { Task { try? await runner.shutdown() } }
            let environment = [
                "ACTIONS_ID_TOKEN_REQUEST_URL": runner.baseURL.appendingPathComponent("token").absoluteString
                    + "?api-version=2.0",
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "runner-request-token",
            ]
            let authorizer = ciAuthorizer(
                server: try TestMCPResourceServer.endpoint, issuer: try Server.base.absoluteString,
                environment: { environment })
            #expect(try await add(through: authorizer).contains("42"))
            #expect(try await Server.tokenRequests(client)["jwt-bearer sub:ci-job"] == 1)
            #expect(runner.requests.count == 1)
        }

        @Test func aServiceWithPrivateKeyJWTHeldToRFC10070() async throws {
            let key = ES256PrivateKey()
            let parameters = try #require(key.publicKey.parameters)
            let reply = try await Server.json(
                "test/clients", method: "POST",
                body: [
                    "jwks": [
                        "keys": [["kty": "EC", "crv": "P-256", "x": parameters.x, "y": parameters.y, "alg": "ES256"]]
                    ],
                    "access_token_lifetime": 300,
                ])
            let clientID = try #require(reply["client_id"] as? String)
            let content = try await callAsService(
                server: try TestMCPResourceServer.endpoint, issuer: try Server.base.absoluteString, clientID: clientID,
                pem: key.pemRepresentation, tool: "add", arguments: ["a": 20, "b": 22])
            #expect(content.map { "\($0)" }.joined().contains("42"))
            let counts = try await Server.tokenRequests(Server.Client(id: clientID, secret: nil))
            #expect(counts["client_credentials"] == 1, "\(counts)")
        }
    }
#endif
