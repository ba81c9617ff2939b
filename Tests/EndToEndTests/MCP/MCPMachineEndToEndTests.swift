import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import JWTKit
import OAuthFlows
import OpenIDConnect
import ResourceDiscovery
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The MCP server as a resource server of the Authlib test server (`Tests/MCPServer/server.py
/// --authorization-server`): it checks tokens by introspection at Authlib, which issues them.
enum TestMCPResourceServer {
    static let url: URL? = ProcessInfo.processInfo.environment["AUTHREQ_TEST_MCP_RESOURCE"].flatMap(
        URL.init(string:))
    static let isConfigured = url != nil && TestAuthorizationServer.isConfigured && IdpyoidcProvider.plain.isConfigured
    static let notRunReason: Comment =
        "AUTHREQ_TEST_MCP_RESOURCE, AUTHREQ_TEST_SERVER or AUTHREQ_TEST_IDPYOIDC is not set, so the machine MCP tests were NOT run. Run Scripts/test to run them."

    static var endpoint: URL { get throws { try #require(url, notRunReason) } }

    /// How many tokens the MCP server accepted (`accepted`, and `accepted:<client id>`).
    static func stats() async throws -> [String: Int] {
        let stats = try #require(URL(string: "/test/stats", relativeTo: try endpoint))
        let (data, _) = try await URLSession.shared.data(from: stats)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Int]) ?? [:]
    }
}

@Test func machineMCPEndToEndTestsHaveServersInCI() {
    if ProcessInfo.processInfo.environment["CI"] != nil {
        #expect(TestMCPResourceServer.isConfigured, "CI must run the machine MCP tests: use Scripts/test")
    }
}

/// MCP tool calls through `MCPAuthorizer` with no person at the keyboard, each run a new process of
/// `mcp-client-example` (the MCP Swift SDK's client): client credentials with `private_key_jwt`
/// (SEP-1046), a workload's token file with the JWT bearer grant (SEP-1933), and the
/// enterprise-managed chain (SEP-990) from an OpenID sign-in at idpyoidc, which issues the ID-JAG
/// that Authlib accepts. After the stored token expires, 8 concurrent calls in each of 3 processes
/// cause one grant (one exchange), counted at the servers.
@Suite(.enabled(if: TestMCPResourceServer.isConfigured, TestMCPResourceServer.notRunReason))
struct MCPMachineEndToEndTests {
    typealias Server = TestAuthorizationServer

    /// A token folder, with the browser script the enterprise sign-in uses (curl with a cookie jar:
    /// idpyoidc keeps the sign-in in a cookie across its redirects).
    struct Folder {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("mcp-machine-\(UUID().uuidString)")
        var tokens: URL { url.appendingPathComponent("tokens") }
        var browser: URL { url.appendingPathComponent("browser.sh") }

        init() throws {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            let jar = url.appendingPathComponent("cookies").path
            try "#!/bin/sh\nexec curl -s -L -c '\(jar)' -b '\(jar)' -o /dev/null \"$1\"\n".write(
                to: browser, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: browser.path)
        }

        func remove() { try? FileManager.default.removeItem(at: url) }

        /// Runs the example against the MCP server: `arguments` name the sign-in, then the tool.
        func run(_ arguments: [String], concurrent: Int = 1, browser useBrowser: Bool = false) async throws
            -> TestHelperProcess.Outcome
        {
            var all = [try TestMCPResourceServer.endpoint.absoluteString, tokens.path, "--concurrent", "\(concurrent)"]
            if !useBrowser { all.append("--no-browser") }
            return try await TestHelperProcess.run(
                MCPPythonServerEndToEndTests.example, all + arguments + ["add", "a=20", "b=22"],
                environment: ["BROWSER": useBrowser ? browser.path : "/bin/false"])
        }

        /// Moves the stored MCP session past its expiry (as 30 s would), for the client `clientID`.
        func expireStoredToken(clientID: String) async throws {
            let signIn = ResourceSignIn(
                resource: try TestMCPResourceServer.endpoint,
                registration: ClientRegistrationPolicy(preRegistered: [
                    try Server.base.absoluteString: .none(id: clientID)
                ]),
                method: .nonInteractive, store: FileTokenStore(directory: tokens),
                configuration: .init(allowsInsecureHTTP: true))
            let key = try await signIn.flow().storeKey
            let store = FileTokenStore(directory: tokens)
            let data = try #require(try await store.load(forKey: key), "a stored MCP session")
            var token = try JSONDecoder().decode(OAuthToken.self, from: data)
            token.expiresAt = Date().addingTimeInterval(-1)
            token.issuedAt = Date().addingTimeInterval(-31)
            try await store.save(try JSONEncoder().encode(token), forKey: key)
        }

        /// Three processes of 8 concurrent calls each; every call must succeed.
        func threeProcessesOfEight(_ arguments: [String]) async throws {
            let outcomes = try await withThrowingTaskGroup(of: TestHelperProcess.Outcome.self) { group in
                for _ in 0..<3 { group.addTask { try await run(arguments, concurrent: 8) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let answers = outcomes.map { $0.output.components(separatedBy: "add: 42").count - 1 }
            #expect(answers == [8, 8, 8], "\(outcomes.map { "\($0.status): \($0.output) \($0.errors)" })")
        }
    }

    @Test func clientCredentialsWithPrivateKeyJWT() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let key = ES256PrivateKey()
        let parameters = try #require(key.publicKey.parameters)
        let reply = try await Server.json(
            "test/clients", method: "POST",
            body: [
                "jwks": [
                    "keys": [["kty": "EC", "crv": "P-256", "x": parameters.x, "y": parameters.y, "alg": "ES256"]]
                ],
                "access_token_lifetime": 30,
            ])
        let client = TestAuthorizationServer.Client(id: try #require(reply["client_id"] as? String), secret: nil)
        let pem = folder.url.appendingPathComponent("key.pem")
        try key.pemRepresentation.write(to: pem, atomically: true, encoding: .utf8)
        let arguments = [
            "--issuer", try Server.base.absoluteString, "--client-id", client.id, "--private-key", pem.path,
        ]

        let first = try await folder.run(arguments)
        #expect(first.status == 0 && first.output.contains("add: 42"), "\(first.output) \(first.errors)")
        try await folder.expireStoredToken(clientID: client.id)
        try await folder.threeProcessesOfEight(arguments)
        let counts = try await Server.tokenRequests(client)
        #expect(counts["client_credentials"] == 2, "one grant to start, one for the expiry: \(counts)")
        #expect(try await TestMCPResourceServer.stats()["accepted:\(client.id)"] ?? 0 >= 25)
    }

    @Test func aWorkloadTokenFileThatRotates() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let platform = JWTBearerEndToEndTests.Platform()
        let client = try await platform.register()
        let file = folder.url.appendingPathComponent("workload-token")
        try await platform.token(for: "job-a").write(to: file, atomically: true, encoding: .utf8)
        let arguments = [
            "--issuer", try Server.base.absoluteString, "--client-id", client.id, "--assertion-file", file.path,
        ]

        let first = try await folder.run(arguments)
        #expect(first.status == 0 && first.output.contains("add: 42"), "\(first.output) \(first.errors)")
        // The platform rotates the token; the stored access token expires.
        try await platform.token(for: "job-b").write(to: file, atomically: true, encoding: .utf8)
        try await folder.expireStoredToken(clientID: client.id)
        try await folder.threeProcessesOfEight(arguments)
        let counts = try await Server.tokenRequests(client)
        #expect(counts[JWTBearerFlow.grantType] == 2, "one grant to start, one for the expiry: \(counts)")
        #expect(counts["jwt-bearer sub:job-a"] == 1 && counts["jwt-bearer sub:job-b"] == 1, "\(counts)")

        // An expired token in the file is not sent: the process fails and says why.
        try await platform.token(for: "job-c", expiresIn: -60).write(to: file, atomically: true, encoding: .utf8)
        try await folder.expireStoredToken(clientID: client.id)
        let stale = try await folder.run(arguments)
        #expect(stale.status != 0)
        #expect(stale.errors.contains("AssertionError(expired)"), "\(stale.errors)")
        #expect(try await Server.tokenRequests(client)["jwt-bearer sub:job-c"] == nil, "nothing was sent")
    }

    /// An enterprise: a client at idpyoidc allowed ID-JAGs for Authlib, where its client (with a
    /// secret) trusts idpyoidc's ID-JAGs. ID tokens live `idTokenLifetime` seconds.
    struct Enterprise {
        let provider: (id: String, secret: String)
        let client: TestAuthorizationServer.Client

        init(idTokenLifetime: Int = 300, idJAGClientID: String? = nil, reply: String? = nil) async throws {
            let authlib = try await Server.json(
                "test/clients", method: "POST",
                body: [
                    "access_token_lifetime": 30,
                    "enterprise_issuer": try IdpyoidcProvider.plain.base.absoluteString,
                    "enterprise_jwks_uri": try IdpyoidcProvider.plain.base.appendingPathComponent("jwks")
                        .absoluteString,
                ])
            client = TestAuthorizationServer.Client(
                id: try #require(authlib["client_id"] as? String), secret: authlib["client_secret"] as? String)
            // A user of its own: RP-initiated logout at idpyoidc (other tests) ends every session
            // of the user it names, and this session must outlive those.
            var body: [String: Any] = [
                "id_jag_clients": [try Server.base.absoluteString: idJAGClientID ?? client.id],
                "id_token_lifetime": idTokenLifetime, "test_user": "erin",
            ]
            if let reply { body["id_jag_reply"] = reply }
            let made = try await IdpyoidcProvider.plain.json("test/clients", method: "POST", body: body)
            provider = (try #require(made["client_id"] as? String), try #require(made["client_secret"] as? String))
        }

        var arguments: [String] {
            get throws {
                [
                    "--issuer", try Server.base.absoluteString, "--client-id", client.id,
                    "--client-secret", try #require(client.secret),
                    "--enterprise-provider", try IdpyoidcProvider.plain.base.absoluteString,
                    "--enterprise-client-id", provider.id, "--enterprise-client-secret", provider.secret,
                ]
            }
        }

        func providerStats() async throws -> [String: Int] {
            try await IdpyoidcProvider.plain.json("test/stats/\(provider.id)").compactMapValues { $0 as? Int }
        }
    }

    /// The stored session at idpyoidc (the enterprise's provider) in `folder`.
    func enterpriseSession(_ enterprise: Enterprise, in folder: Folder) async throws -> OAuthToken {
        let provider = try await OpenIDProvider.discover(issuer: try IdpyoidcProvider.plain.base)
        let openID = OpenIDClient(
            provider: provider,
            client: .clientSecretBasic(id: enterprise.provider.id, secret: enterprise.provider.secret))
        let key = try openID.sessionFlow().storeKey
        let data = try #require(try await FileTokenStore(directory: folder.tokens).load(forKey: key))
        return try JSONDecoder().decode(OAuthToken.self, from: data)
    }

    @Test func theEnterpriseChainFromAnOpenIDSignIn() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        // ID tokens of 20 s: they outlive the first steps and then expire while the session's
        // access token (an hour) does not.
        let enterprise = try await Enterprise(idTokenLifetime: 20)
        let arguments = try enterprise.arguments

        // 1. The user signs in at the enterprise's provider once; no browser at Authlib.
        let first = try await folder.run(arguments, browser: true)
        #expect(first.status == 0 && first.output.contains("add: 42"), "\(first.output) \(first.errors)")
        var provider = try await enterprise.providerStats()
        var authlib = try await Server.tokenRequests(enterprise.client)
        #expect(provider["id-jag"] == 1 && authlib["id-jag"] == 1, "\(provider) \(authlib)")
        #expect(authlib["authorization_code"] == nil, "no sign-in at the MCP server's authorization server")

        // 2. Expiry: 3 processes × 8 calls, no browser: one exchange, one grant.
        try await folder.expireStoredToken(clientID: enterprise.client.id)
        try await folder.threeProcessesOfEight(arguments)
        provider = try await enterprise.providerStats()
        authlib = try await Server.tokenRequests(enterprise.client)
        #expect(provider["id-jag"] == 2 && authlib["id-jag"] == 2, "\(provider) \(authlib)")

        // 3. The ID token expires; the next expiry refreshes the session at the provider first
        //    (no browser), and the exchange presents the new ID token.
        let before = try await enterpriseSession(enterprise, in: folder)
        let idTokenExpiry = try #require(Self.expiry(of: before.idToken))
        try await Task.sleep(for: .seconds(max(0, idTokenExpiry.timeIntervalSinceNow) + 1))
        try await folder.expireStoredToken(clientID: enterprise.client.id)
        let third = try await folder.run(arguments)
        #expect(third.status == 0 && third.output.contains("add: 42"), "\(third.output) \(third.errors)")
        let after = try await enterpriseSession(enterprise, in: folder)
        #expect(after.idToken != before.idToken, "the session was refreshed at the provider")
        provider = try await enterprise.providerStats()
        #expect(provider["id-jag"] == 3, "\(provider)")
        #expect(provider["id-jag expired subject"] == nil, "an expired ID token was never presented: \(provider)")
        #expect(try await Server.tokenRequests(enterprise.client)["authorization_code"] == nil)
    }

    /// The chain run in this process: a sign-in at idpyoidc, then the JWT bearer grant at Authlib
    /// with an ID-JAG for the MCP server.
    func chain(_ enterprise: Enterprise) async throws -> JWTBearerFlow {
        let provider = try await OpenIDProvider.discover(issuer: try IdpyoidcProvider.plain.base)
        let openID = OpenIDClient(
            provider: provider,
            client: .clientSecretBasic(id: enterprise.provider.id, secret: enterprise.provider.secret))
        let session = OAuthAuthenticator(store: InMemoryTokenStore())
        _ = try await openID.signIn(
            redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "openid offline_access",
            request: OpenIDAuthenticationRequest(prompt: "consent"),
            userAgent: LoopbackUserAgent(opener: CookieBrowser(), timeout: 30), configuring: session)
        let grant = try IdentityAssertionGrant(openID: openID, session: session)
        return JWTBearerFlow(
            tokenEndpoint: try Server.tokenEndpoint,
            client: .clientSecretBasic(id: enterprise.client.id, secret: try #require(enterprise.client.secret)),
            assertion: grant.assertion(
                audience: try Server.base.absoluteString, resource: try TestMCPResourceServer.endpoint, scope: "mcp"),
            scope: "mcp", resources: [try TestMCPResourceServer.endpoint])
    }

    @Test func anIDJAGTheAuthorizationServerRefusesIsInvalidGrant() async throws {
        // The provider names another client in the ID-JAG than the one that presents it.
        let enterprise = try await Enterprise(idJAGClientID: "someone-else")
        let flow = try await chain(enterprise)
        let context = AuthenticationContext(transport: URLSessionTransport(), allowsInsecureHTTP: true)
        let error = await #expect(throws: OAuthError.self) { try await flow.obtainToken(for: context) }
        #expect(error?.code == .invalidGrant, "\(String(describing: error))")
        #expect(
            error?.description.contains("client_id") == true, "error_description kept: \(String(describing: error))")
        let counts = try await Server.tokenRequests(enterprise.client)
        #expect(counts["id-jag refused:client_id"] == 1, "\(counts)")
    }

    @Test func aReplyThatIsNotAnIDJAGIsNeverPresented() async throws {
        for reply in ["access_token", "no_type"] {
            let enterprise = try await Enterprise(reply: reply)
            let flow = try await chain(enterprise)
            let context = AuthenticationContext(transport: URLSessionTransport(), allowsInsecureHTTP: true)
            let error = await #expect(throws: TokenEndpointError.self) { try await flow.obtainToken(for: context) }
            #expect(error?.field == "issued_token_type", "\(reply): \(String(describing: error))")
            #expect(try await enterprise.providerStats()["id-jag"] == 1, "\(reply): the provider issued one")
            #expect(
                try await Server.tokenRequests(enterprise.client)[JWTBearerFlow.grantType] == nil,
                "\(reply): nothing was sent to the authorization server")
        }
    }

    @Test func authreqEnterpriseProfilePrintsATokenWithoutABrowser() async throws {
        let enterprise = try await Enterprise()
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let secrets = tool.home.appendingPathComponent("secrets")
        try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
        func secretFile(_ name: String, _ secret: String) throws -> String {
            let file = secrets.appendingPathComponent(name)
            _ = FileManager.default.createFile(
                atPath: file.path, contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600])
            return file.path
        }
        // The user's profile at the enterprise's provider, signed in once in the browser (idpyoidc
        // keeps the sign-in in a cookie across its redirects).
        let port = try await freeLoopbackPort()
        var added = try await tool.run([
            "profile", "add", "corp", "--issuer", try IdpyoidcProvider.plain.base.absoluteString, "--client-id",
            enterprise.provider.id, "--client-secret-file", try secretFile("corp", enterprise.provider.secret),
            // idpyoidc pairs offline_access with prompt=consent, which authreq does not send: the
            // session here has no refresh token, and its ID token (300 s) outlives the test.
            "--scope", "openid", "--redirect-uri", "http://127.0.0.1:\(port)/callback",
        ])
        #expect(added.status == 0, "\(added.stderr)")
        let browser = tool.home.appendingPathComponent("cookie-browser.sh")
        let jar = tool.home.appendingPathComponent("cookies").path
        try "#!/bin/sh\nexec curl -s -L -c '\(jar)' -b '\(jar)' -o /dev/null \"$1\"\n".write(
            to: browser, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: browser.path)
        let corp = try await tool.run(
            ["login", "--profile", "corp", "--timeout", "30"], environment: ["BROWSER": browser.path])
        #expect(corp.status == 0, "\(corp.stderr)")

        // The MCP server's profile: the enterprise chain, no browser.
        added = try await tool.run([
            "profile", "add", "tools", "--resource", try TestMCPResourceServer.endpoint.absoluteString,
            "--issuer", try Server.base.absoluteString, "--client-id", enterprise.client.id,
            "--client-secret-file", try secretFile("tools", try #require(enterprise.client.secret)),
            "--enterprise-profile", "corp",
        ])
        #expect(added.status == 0, "\(added.stderr)")
        let login = try await tool.run(["login", "--profile", "tools"], environment: ["BROWSER": "/bin/false"])
        #expect(login.status == 0, "\(login.stderr)")
        let token = try await tool.run(["token", "--profile", "tools"], environment: ["BROWSER": "/bin/false"])
        #expect(token.status == 0 && !token.stdout.isEmpty, "\(token.stderr)")
        #expect(try await enterprise.providerStats()["id-jag"] == 1)
        #expect(try await Server.tokenRequests(enterprise.client)["id-jag"] == 1)

        // The stored token expires (as 30 s would): a new process runs the chain again.
        let tokens = tool.home.appendingPathComponent("state/authreq/tokens")
        let signIn = ResourceSignIn(
            resource: try TestMCPResourceServer.endpoint,
            registration: ClientRegistrationPolicy(preRegistered: [
                try Server.base.absoluteString: .none(id: enterprise.client.id)
            ]),
            method: .nonInteractive, store: FileTokenStore(directory: tokens))
        let key = try await signIn.flow(account: "tools").storeKey
        let store = FileTokenStore(directory: tokens)
        var stored = try JSONDecoder().decode(OAuthToken.self, from: try #require(try await store.load(forKey: key)))
        stored.expiresAt = Date().addingTimeInterval(-1)
        try await store.save(try JSONEncoder().encode(stored), forKey: key)
        let again = try await tool.run(["token", "--profile", "tools"], environment: ["BROWSER": "/bin/false"])
        #expect(again.status == 0 && again.stdout != token.stdout, "\(again.stderr)")
        #expect(try await enterprise.providerStats()["id-jag"] == 2)
        #expect(try await Server.tokenRequests(enterprise.client)["id-jag"] == 2)
    }

    /// The `exp` of a JWT, read without verifying it.
    static func expiry(of token: String?) -> Date? {
        guard let token, let payload = token.split(separator: ".").dropFirst().first else { return nil }
        var base64 = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let seconds = object["exp"] as? Double
        else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }
}
