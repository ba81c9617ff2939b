import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The server of the ported MCP conformance scenarios (`Tests/MCPServer/scenarios.py`), which
/// `Scripts/test` starts; its control URL comes in `AUTHREQ_TEST_MCP_SCENARIOS`.
enum ConformanceScenarioServer {
    static let url = ProcessInfo.processInfo.environment["AUTHREQ_TEST_MCP_SCENARIOS"].flatMap(URL.init(string:))
    static let isConfigured = url != nil
    static let notRunReason: Comment =
        "AUTHREQ_TEST_MCP_SCENARIOS is not set, so the MCP conformance scenarios were NOT run. Run Scripts/test."

    /// A run of one scenario: its MCP server's URL and what a pre-registered client needs.
    struct Run: Decodable {
        let id: String
        let server_url: String
        let context: [String: String]

        var server: URL { URL(string: server_url) ?? URL(fileURLWithPath: "/") }
    }

    /// What the scenario's servers saw the client do.
    struct Check: Decodable, CustomStringConvertible {
        let id: String
        let status: String
        let description: String
    }

    /// Starts a run of `scenario` on new loopback ports.
    static func start(_ scenario: String) async throws -> Run {
        let base = try #require(url, notRunReason)
        var request = URLRequest(url: base.appendingPathComponent("runs"))
        request.httpMethod = "POST"
        request.httpBody = try JSONEncoder().encode(["scenario": scenario])
        let (data, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 201, "\(String(decoding: data, as: UTF8.self))")
        return try JSONDecoder().decode(Run.self, from: data)
    }

    /// A session signed in before the run (`expired-session` only).
    static func earlierSession<Session: Decodable>(of run: Run, as type: Session.Type) async throws -> Session {
        let base = try #require(url, notRunReason)
        var request = URLRequest(url: base.appendingPathComponent("runs/\(run.id)/session"))
        request.httpMethod = "POST"
        let (data, _) = try await URLSession.shared.data(for: request)
        return try JSONDecoder().decode(Session.self, from: data)
    }

    /// The run's checks, with the scenario's final ones (what must not, or must, have happened).
    static func checks(of run: Run) async throws -> [Check] {
        let base = try #require(url, notRunReason)
        let (data, _) = try await URLSession.shared.data(from: base.appendingPathComponent("runs/\(run.id)/checks"))
        return try JSONDecoder().decode([Check].self, from: data)
    }
}

/// Guards against a silent skip: in CI (`CI` set) the scenario server must be there.
@Test func mcpConformanceScenariosHaveAServerInCI() {
    if ProcessInfo.processInfo.environment["CI"] != nil {
        #expect(ConformanceScenarioServer.isConfigured, "CI must run the MCP conformance scenarios: use Scripts/test")
    }
}

#if MCP
    import CodeFlowOAuth
    import DPoP
    import JWTKit
    import MCP
    import MCPAuthentication
    import OAuthFlows
    import OpenIDConnect
    import ResourceDiscovery

    /// The client authorization scenarios of the MCP conformance suite
    /// (modelcontextprotocol/conformance, `src/scenarios/client/auth/`), ported: one test per
    /// scenario, named after it. Each runs the MCP Swift SDK's `Client` over its
    /// `HTTPClientTransport` with `MCPAuthorizer` (connect, `tools/list`, `tools/call`) against
    /// the scenario's servers, then asserts what the client did (the server's checks: none
    /// failed or warned, the scenario's own present) and how it ended.
    @Suite(.enabled(if: ConformanceScenarioServer.isConfigured, ConformanceScenarioServer.notRunReason))
    struct MCPConformanceScenarioTests {
        typealias Run = ConformanceScenarioServer.Run

        /// The MCP client of one scenario, configured as the scenario needs.
        struct ScenarioClient {
            var registration = ClientRegistrationPolicy.dynamic(clientName: "conformance-client")
            var clientCredentials = false
            /// A sign-in method instead of the browser or `clientCredentials`.
            var method: ResourceSignIn.Method?
            /// A scope instead of the challenge's.
            var scope: String?
            var configuration = OAuthAuthenticator.Configuration()
            var legacyMCPDiscovery = false
            let browser = BrowserSimulator()

            /// How a run ended: the error (the authorizer's whole error when it has one), the
            /// tools listed and the tool's answer.
            struct Outcome {
                var error: (any Error)?
                var tools: [String] = []
                var answer: String?
            }

            func connect(to run: Run) async -> Outcome {
                var signIn = ResourceSignIn(
                    resource: run.server, registration: registration,
                    method: method
                        ?? (clientCredentials
                            ? .clientCredentials : .browser(LoopbackUserAgent(opener: browser, timeout: 30))),
                    store: InMemoryTokenStore(), configuration: configuration, scope: scope)
                signIn.legacyMCPDiscovery = legacyMCPDiscovery
                let authorizer = MCPAuthorizer(signIn: signIn)
                let transport = authorizer.makeTransport(streaming: false)  // the documented wiring
                let client = MCP.Client(name: "conformance-client", version: "1.0")
                var outcome = Outcome()
                do {
                    _ = try await client.connect(transport: transport)
                    let (tools, _) = try await client.listTools()
                    outcome.tools = tools.map(\.name)
                    let (content, _) = try await client.callTool(name: "test-tool", arguments: [:])
                    outcome.answer = content.compactMap { item -> String? in
                        if case .text(let text, _, _) = item { return text }
                        return nil
                    }.joined()
                } catch {
                    outcome.error = authorizer.lastError ?? error
                }
                await client.disconnect()
                return outcome
            }

            var openedBrowser: Bool { browser.openedURLs.withLock { !$0.isEmpty } }
        }

        /// Runs `scenario` with `client`; expects the MCP calls to succeed (or to fail, for a
        /// scenario the client must refuse), no check to have failed or warned, and each of
        /// `required` to have passed.
        @discardableResult
        func run(
            _ scenario: String, client: ScenarioClient = ScenarioClient(), succeeds: Bool = true,
            required: [String], sourceLocation: SourceLocation = #_sourceLocation,
            configure: (Run, inout ScenarioClient) throws -> Void = { _, _ in }
        ) async throws -> ScenarioClient.Outcome {
            let run = try await ConformanceScenarioServer.start(scenario)
            var client = client
            try configure(run, &client)
            let outcome = await client.connect(to: run)
            if succeeds {
                #expect(
                    outcome.error == nil, "\(outcome.error.map { String(describing: $0) } ?? "")",
                    sourceLocation: sourceLocation)
                #expect(outcome.tools == ["test-tool"], sourceLocation: sourceLocation)
                #expect(outcome.answer == "test", sourceLocation: sourceLocation)
            } else {
                #expect(outcome.error != nil, "the client must refuse", sourceLocation: sourceLocation)
            }
            let checks = try await ConformanceScenarioServer.checks(of: run)
            for check in checks where check.status == "FAILURE" || check.status == "WARNING" {
                Issue.record(
                    "\(scenario): \(check.id) \(check.status): \(check.description)", sourceLocation: sourceLocation)
            }
            for id in required {
                #expect(
                    checks.contains { $0.id == id && $0.status == "SUCCESS" }, "\(scenario): \(id) did not pass",
                    sourceLocation: sourceLocation)
            }
            return outcome
        }

        static let pkce = ["pkce-code-challenge-sent", "pkce-s256-method-used", "pkce-verifier-matches-challenge"]

        // MARK: Metadata discovery

        @Test func metadataDefault() async throws {
            try await run("metadata-default", required: ["prm-requested", "token-request-made"] + Self.pkce)
        }

        @Test func metadataVar1() async throws {
            try await run("metadata-var1", required: ["prm-requested", "token-request-made"] + Self.pkce)
        }

        @Test func metadataVar2() async throws {
            try await run("metadata-var2", required: ["prm-requested", "token-request-made"] + Self.pkce)
        }

        @Test func metadataVar3() async throws {
            try await run("metadata-var3", required: ["prm-requested", "token-request-made"] + Self.pkce)
        }

        @Test func twentyTwentyFiveMarchOAuthMetadataBackcompat() async throws {
            // Strict by default: no resource metadata is no sign-in, and nothing is sent.
            let strictClient = ScenarioClient()
            let strict = await strictClient.connect(
                to: try await ConformanceScenarioServer.start("2025-03-26-oauth-metadata-backcompat"))
            #expect((strict.error as? ResourceDiscoveryError)?.code == .notFound, "\(String(describing: strict.error))")
            #expect(!strictClient.openedBrowser)
            var client = ScenarioClient()
            client.legacyMCPDiscovery = true
            try await run(
                "2025-03-26-oauth-metadata-backcompat", client: client,
                required: ["authorization-server-metadata", "client-registration", "token-request-made"] + Self.pkce)
        }

        @Test func twentyTwentyFiveMarchOAuthEndpointFallback() async throws {
            var client = ScenarioClient()
            client.legacyMCPDiscovery = true
            try await run(
                "2025-03-26-oauth-endpoint-fallback", client: client,
                required: ["client-registration", "authorization-request", "token-request-made"] + Self.pkce)
        }

        @Test func metadataIssuerMismatch() async throws {
            let outcome = try await run(
                "metadata-issuer-mismatch", succeeds: false, required: ["metadata-issuer-validated"])
            #expect((outcome.error as? ResourceDiscoveryError)?.code == .issuerMismatch)
        }

        @Test func resourceMismatch() async throws {
            let client = ScenarioClient()
            let outcome = try await run(
                "resource-mismatch", client: client, succeeds: false, required: ["resource-mismatch-rejected"])
            #expect((outcome.error as? ResourceDiscoveryError)?.code == .resourceMismatch)
            #expect(!client.openedBrowser)
        }

        // MARK: Registration and client authentication

        @Test func basicCIMD() async throws {
            var client = ScenarioClient()
            client.registration = ClientRegistrationPolicy(
                clientIDMetadataDocument: try ClientIDMetadataDocument(
                    url: try #require(URL(string: "https://conformance-test.local/client-metadata.json")),
                    metadata: ClientMetadata(
                        clientName: "conformance-client", redirectURIs: [ResourceSignIn.defaultRedirectURI])))
            try await run(
                "basic-cimd", client: client, required: ["cimd-client-id-used", "cimd-no-registration"] + Self.pkce)
        }

        @Test func tokenEndpointAuthBasic() async throws {
            try await run("token-endpoint-auth-basic", required: Self.tokenEndpointChecks)
        }

        @Test func tokenEndpointAuthPost() async throws {
            try await run("token-endpoint-auth-post", required: Self.tokenEndpointChecks)
        }

        @Test func tokenEndpointAuthNone() async throws {
            try await run("token-endpoint-auth-none", required: Self.tokenEndpointChecks)
        }

        static let tokenEndpointChecks = [
            "token-endpoint-auth-method", "resource-parameter-in-authorization", "resource-parameter-in-token",
            "resource-parameter-consistent", "application-type-present",
        ]

        @Test func preRegistration() async throws {
            try await run("pre-registration", required: ["pre-registration-auth", "pre-registration-used"]) {
                run, client in
                let issuer = try #require(run.context["issuer"])
                client.registration = ClientRegistrationPolicy(preRegistered: [
                    issuer: .clientSecretBasic(
                        id: try #require(run.context["client_id"]), secret: try #require(run.context["client_secret"]))
                ])
            }
        }

        @Test func clientCredentialsJWT() async throws {
            try await run(
                "client-credentials-jwt",
                required: ["client-credentials-jwt-verified", "client-credentials-grant-type"]
            ) {
                run, client in
                let issuer = try #require(run.context["issuer"])
                let key = try ES256PrivateKey(pem: try #require(run.context["private_key_pem"]))
                client.clientCredentials = true
                client.registration = ClientRegistrationPolicy(preRegistered: [
                    issuer: .assertion(
                        id: try #require(run.context["client_id"]),
                        signer: PrivateKeyJWT(key: key, audience: .issuer(issuer)))
                ])
            }
        }

        /// A workload's token for the scenario's pre-registered client, from the run's context.
        static func workload(_ token: String, scope: String? = nil) -> (Run, inout ScenarioClient) throws -> Void {
            { run, client in
                client.method = .jwtBearer(.fixed(try #require(run.context[token])))
                client.scope = scope
                client.registration = ClientRegistrationPolicy(preRegistered: [
                    try #require(run.context["issuer"]): .none(id: try #require(run.context["client_id"]))
                ])
            }
        }

        /// `error` as `E`, or the `E` inside the authentication error that carries it.
        static func underlying<E: Error>(_ type: E.Type, in error: (any Error)?) -> E? {
            error as? E ?? (error as? AuthenticationError)?.underlyingError as? E
        }

        /// The server's error code in `error`, or in the authentication error that carries it.
        static func oauthCode(of error: (any Error)?) -> OAuthErrorCode? {
            underlying(OAuthError.self, in: error)?.code
        }

        @Test func wifJWTBearer() async throws {
            try await run("wif-jwt-bearer", required: ["wif-assertion-verified"], configure: Self.workload("valid_jwt"))
            // Refusals end the sign-in, typed, with no retry and no other grant (the scenario warns
            // on either).
            let audience = try await run(
                "wif-jwt-bearer", succeeds: false, required: [], configure: Self.workload("wrong_audience_jwt"))
            // The engine says a sign-in is needed again, with the server's error inside.
            #expect(Self.oauthCode(of: audience.error) == .invalidGrant, "\(String(describing: audience.error))")
            let unauthorized = try await run(
                "wif-jwt-bearer", succeeds: false, required: ["wif-assertion-verified"],
                configure: Self.workload("valid_jwt", scope: "wif.trigger-unauthorized"))
            #expect(Self.oauthCode(of: unauthorized.error) == .unauthorizedClient)
            let scope = try await run(
                "wif-jwt-bearer", succeeds: false, required: ["wif-assertion-verified"],
                configure: Self.workload("valid_jwt", scope: "wif.rejected"))
            #expect(Self.oauthCode(of: scope.error) == .invalidScope)
            // An expired token is not sent at all.
            let run = try await ConformanceScenarioServer.start("wif-jwt-bearer")
            var client = ScenarioClient()
            try Self.workload("expired_jwt")(run, &client)
            let expired = await client.connect(to: run)
            let notSent = Self.underlying(AssertionError.self, in: expired.error)
            #expect(notSent?.code == .expired, "\(String(describing: expired.error))")
            let checks = try await ConformanceScenarioServer.checks(of: run)
            #expect(!checks.contains { $0.id == "token-request" }, "no token request: \(checks)")
        }

        @Test func enterpriseManagedAuthorization() async throws {
            try await run(
                "enterprise-managed-authorization",
                required: ["complete-flow-token-exchange", "complete-flow-jwt-bearer"]
            ) {
                run, client in
                let endpoint = try #require(run.context["idp_token_endpoint"])
                let provider = IdentityAssertionGrant(
                    tokenEndpoint: try #require(URL(string: endpoint)),
                    client: .none(id: try #require(run.context["idp_client_id"])),
                    subject: .fixed(try #require(run.context["idp_id_token"]), type: .idToken))
                client.method = .enterpriseManaged(provider)
                client.registration = ClientRegistrationPolicy(preRegistered: [
                    try #require(run.context["issuer"]): .clientSecretBasic(
                        id: try #require(run.context["client_id"]), secret: try #require(run.context["client_secret"]))
                ])
            }
        }

        @Test func clientCredentialsBasic() async throws {
            try await run(
                "client-credentials-basic",
                required: ["client-credentials-basic-auth", "client-credentials-grant-type"]
            ) {
                run, client in
                client.clientCredentials = true
                client.registration = ClientRegistrationPolicy(preRegistered: [
                    try #require(run.context["issuer"]): .clientSecretBasic(
                        id: try #require(run.context["client_id"]), secret: try #require(run.context["client_secret"]))
                ])
            }
        }

        // MARK: Scopes

        @Test func scopeFromWWWAuthenticate() async throws {
            try await run("scope-from-www-authenticate", required: ["scope-from-www-authenticate"])
        }

        @Test func scopeFromScopesSupported() async throws {
            try await run("scope-from-scopes-supported", required: ["scope-from-scopes-supported"])
        }

        @Test func scopeOmittedWhenUndefined() async throws {
            try await run("scope-omitted-when-undefined", required: ["scope-omitted-when-undefined"])
        }

        @Test func scopeStepUp() async throws {
            let client = ScenarioClient()
            try await run(
                "scope-step-up", client: client,
                required: ["scope-step-up-initial", "scope-step-up-escalation", "scope-union-on-reauthorization"])
            #expect(client.browser.openedURLs.withLock { $0.count } == 2, "one sign-in, one step-up")
        }

        @Test func scopeRetryLimit() async throws {
            let outcome = try await run("scope-retry-limit", succeeds: false, required: ["scope-retry-limit"])
            #expect(
                (outcome.error as? StepUpError)?.code == .refusedAfterStepUp, "\(String(describing: outcome.error))")
        }

        @Test func offlineAccessScope() async throws {
            try await run(
                "offline-access-scope", required: ["offline-access-requested", "client-metadata-grant-types"])
        }

        @Test func offlineAccessNotSupported() async throws {
            try await run("offline-access-not-supported", required: ["offline-access-not-requested"])
        }

        // MARK: DPoP

        @Test func dpop() async throws {
            var client = ScenarioClient()
            client.configuration = OAuthAuthenticator.Configuration(proofOfPossession: DPoPProver())
            try await run(
                "dpop", client: client,
                required: ["dpop-token-request-proof", "dpop-auth-scheme", "dpop-fresh-proof", "dpop-token-acquired"])
        }

        @Test func dpopNonce() async throws {
            var client = ScenarioClient()
            client.configuration = OAuthAuthenticator.Configuration(proofOfPossession: DPoPProver())
            try await run(
                "dpop-nonce", client: client,
                required: [
                    "dpop-token-request-proof", "dpop-auth-scheme", "dpop-fresh-proof", "dpop-as-nonce-honored",
                    "dpop-rs-nonce-honored", "dpop-as-nonce-honored-seen", "dpop-rs-nonce-honored-seen",
                ])
        }

        // MARK: Authorization servers and RFC 9207

        @Test func authorizationServerMigration() async throws {
            try await run(
                "authorization-server-migration", required: ["reregister-on-as-change", "no-reuse-of-previous-client"])
        }

        @Test func issSupported() async throws {
            try await run("iss-supported", required: ["iss-accepted"])
        }

        @Test func issNotAdvertised() async throws {
            try await run("iss-not-advertised", required: ["iss-accepted"])
        }

        func refusesTheRedirect(_ scenario: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let outcome = try await run(
                scenario, succeeds: false, required: ["iss-rejected"], sourceLocation: sourceLocation)
            // The engine reports the failed sign-in; the code flow's refusal is its cause.
            let refusal = (outcome.error as? AuthenticationError)?.underlyingError ?? outcome.error
            #expect(
                (refusal as? CodeFlowError)?.code == .issuerMismatch, "\(String(describing: outcome.error))",
                sourceLocation: sourceLocation)
        }

        // MARK: The project's own scenarios: what a real server sends, read as sent

        /// A server that answers GET with 405 and names its metadata only in its 401: discovery
        /// reads the 401 the client got (its `resource_metadata` and its `scope`), and sends no
        /// request of its own to the MCP endpoint.
        @Test func theChallengeThatTriggeredTheSignInIsWhatDiscoveryReads() async throws {
            try await run(
                "authreq-get-405-metadata-only-in-challenge",
                required: ["prm-requested", "scope-from-the-401", "token-request-made"] + Self.pkce)
        }

        /// A 307 from the MCP server to another origin: the request that carries the token is not
        /// followed there (the other origin sees no credential), the call fails, and the
        /// authorizer gives no header for, and answers no challenge of, that origin.
        @Test func aRedirectToAnotherOriginNeverCarriesTheTokenAndThatOriginGetsNoHeader() async throws {
            let run = try await ConformanceScenarioServer.start("authreq-redirect-to-another-origin")
            let other = try #require(run.context["other_origin"].flatMap(URL.init(string:)))
            let browser = BrowserSimulator()
            let authorizer = MCPAuthorizer(
                signIn: ResourceSignIn(
                    resource: run.server, registration: .dynamic(clientName: "conformance-client"),
                    method: .browser(LoopbackUserAgent(opener: browser, timeout: 30)), store: InMemoryTokenStore()))
            let client = MCP.Client(name: "conformance-client", version: "1.0")
            _ = try await client.connect(transport: authorizer.makeTransport(streaming: false))
            await #expect(throws: (any Error).self, "tools/list was redirected; the redirect was refused") {
                _ = try await client.listTools()
            }
            await client.disconnect()
            let checks = try await ConformanceScenarioServer.checks(of: run)
            for check in checks where check.status == "FAILURE" || check.status == "WARNING" {
                Issue.record("\(check.id) \(check.status): \(check.description)")
            }
            #expect(checks.contains { $0.id == "redirected" && $0.status == "SUCCESS" }, "the server did redirect")
            #expect(!checks.contains { $0.id == "redirect-followed" }, "refused, not followed without the token")
            // The other origin is another resource: no header for it, and its challenge is refused.
            #expect(authorizer.authorizationHeader(for: run.server) != nil, "signed in to the MCP server")
            #expect(authorizer.authorizationHeader(for: other.appendingPathComponent("mcp")) == nil)
            let error = await #expect(throws: AuthenticationError.self) {
                _ = try await authorizer.handleChallenge(
                    statusCode: 401, headers: ["WWW-Authenticate": #"Bearer error="invalid_token""#],
                    endpoint: other.appendingPathComponent("mcp"), operationKey: nil, session: URLSession.shared)
            }
            #expect(error?.code == .foreignResource)
        }

        /// A 307 from the MCP server to a path of its own origin outside the MCP endpoint (and,
        /// next, to `/mcp/%2e%2e/admin/mcp`): the request that carries the token is not followed
        /// there, and the authorizer gives no header for those paths however they are spelled.
        @Test func aRedirectToAPathOutsideTheEndpointNeverCarriesTheToken() async throws {
            let run = try await ConformanceScenarioServer.start("authreq-redirect-outside-the-endpoint")
            let authorizer = MCPAuthorizer(
                signIn: ResourceSignIn(
                    resource: run.server, registration: .dynamic(clientName: "conformance-client"),
                    method: .browser(LoopbackUserAgent(opener: BrowserSimulator(), timeout: 30)),
                    store: InMemoryTokenStore()))
            let client = MCP.Client(name: "conformance-client", version: "1.0")
            _ = try await client.connect(transport: authorizer.makeTransport(streaming: false))
            for _ in 0..<2 {
                await #expect(throws: (any Error).self, "tools/list was redirected; the redirect was refused") {
                    _ = try await client.listTools()
                }
            }
            await client.disconnect()
            let checks = try await ConformanceScenarioServer.checks(of: run)
            for check in checks where check.status == "FAILURE" || check.status == "WARNING" {
                Issue.record("\(check.id) \(check.status): \(check.description)")
            }
            #expect(checks.contains { $0.id == "redirected" && $0.status == "SUCCESS" }, "the server did redirect")
            #expect(!checks.contains { $0.id == "redirect-followed" }, "refused, not followed")
            #expect(authorizer.authorizationHeader(for: run.server) != nil, "signed in to the MCP server")
            let base = try #require(URL(string: "/", relativeTo: run.server)?.absoluteURL)
            for outside in [
                "admin/mcp", "mcp/../admin", "mcp/%2e%2e/admin", "mcp/%2E%2E/admin", "mcp/./../admin", "mcp/..",
            ] {
                let url = try #require(URL(string: base.absoluteString + outside))
                #expect(authorizer.authorizationHeader(for: url) == nil, "\(outside)")
            }
        }

        /// The same redirect through the MCP SDK's own default session: it follows the 307 and
        /// carries the token to the other origin. This is what `makeTransport()` prevents; the
        /// test shows the scenario catches it.
        @Test func withoutTheGuardedSessionTheSDKCarriesTheTokenToTheOtherOrigin() async throws {
            let run = try await ConformanceScenarioServer.start("authreq-redirect-to-another-origin")
            let authorizer = MCPAuthorizer(
                signIn: ResourceSignIn(
                    resource: run.server, registration: .dynamic(clientName: "conformance-client"),
                    method: .browser(LoopbackUserAgent(opener: BrowserSimulator(), timeout: 30)),
                    store: InMemoryTokenStore()))
            let transport = HTTPClientTransport(
                endpoint: run.server, streaming: false, authorizer: MCPTransportAuthorizer(authorizer),
                requestModifier: authorizer.modify)
            let client = MCP.Client(name: "conformance-client", version: "1.0")
            _ = try await client.connect(transport: transport)
            _ = try? await client.listTools()
            await client.disconnect()
            let checks = try await ConformanceScenarioServer.checks(of: run)
            #expect(
                checks.contains { $0.id == "credential-at-another-origin" },
                "the plain session leaks the token: \(checks.map(\.id))")
        }

        @Test func issSupportedMissing() async throws { try await refusesTheRedirect("iss-supported-missing") }
        @Test func issWrongIssuer() async throws { try await refusesTheRedirect("iss-wrong-issuer") }
        @Test func issUnexpected() async throws { try await refusesTheRedirect("iss-unexpected") }
        @Test func issNormalized() async throws { try await refusesTheRedirect("iss-normalized") }
    }
#endif
