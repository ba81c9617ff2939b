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

private typealias Server = TestAuthorizationServer

/// RFC 7523 §2.1 against Authlib's JWT bearer grant (`authlib.oauth2.rfc7523`), which verifies
/// each assertion's signature with the platform key the test registered, its `iss`, `aud` and
/// `exp`: a workload token file rotated while the client runs, and an assertion the client signs.
@Suite(.enabled(if: Server.isConfigured, Server.notRunReason))
struct JWTBearerEndToEndTests {
    struct Me: AuthenticatedResource {
        typealias Output = Data
        let authenticator: any RequestAuthenticator
        let url: URL
        func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
    }

    struct WorkloadClaims: JWTPayload {
        let iss: String
        let sub: String
        let aud: String
        let exp: Int
        let iat: Int
        let jti: String
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// A platform (a Kubernetes cluster, say) whose tokens the server trusts for a new client.
    struct Platform {
        let key = ES256PrivateKey()
        let issuer = "https://platform-\(UUID().uuidString.prefix(8).lowercased()).example.com"

        func register() async throws -> TestAuthorizationServer.Client {
            let parameters = try #require(key.publicKey.parameters)
            let jwk: [String: Any] = ["kty": "EC", "crv": "P-256", "x": parameters.x, "y": parameters.y]
            let reply = try await Server.json(
                "test/clients", method: "POST",
                // Tokens of 30 s: the test moves its own clock past them, and a loaded machine
                // never sees one expire at the server first.
                body: ["public": true, "workload_issuer": issuer, "workload_jwk": jwk, "access_token_lifetime": 30])
            return TestAuthorizationServer.Client(id: try #require(reply["client_id"] as? String), secret: nil)
        }

        /// A token for `subject`, as the platform would mount it in the workload's file.
        func token(for subject: String, expiresIn: TimeInterval = 300, signedWith other: ES256PrivateKey? = nil)
            async throws -> String
        {
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: other ?? key)
            let now = Int(Date().timeIntervalSince1970)
            return try await keys.sign(
                WorkloadClaims(
                    iss: issuer, sub: subject, aud: try Server.tokenEndpoint.absoluteString, exp: now + Int(expiresIn),
                    iat: now, jti: UUID().uuidString))
        }
    }

    @Test func aRotatedWorkloadTokenFileIsVerifiedByTheServerForEveryGrant() async throws {
        let platform = Platform()
        let client = try await platform.register()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("workload-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try await platform.token(for: "job-a").write(to: file, atomically: true, encoding: .utf8)
        // The engine's clock moves the access token past its expiry without a sleep; the workload
        // token's expiry (5 minutes, by the real clock) stays ahead of it.
        let clock = TestClock(Date())
        let authenticator = OAuthAuthenticator(
            flow: JWTBearerFlow(
                tokenEndpoint: try Server.tokenEndpoint, client: .none(id: client.id), assertion: .file(file)),
            configuration: .init(clock: clock, allowsInsecureHTTP: true))
        let me = Me(authenticator: authenticator, url: try Server.base.appendingPathComponent("api/me"))
        _ = try await me.request()

        // The platform rotates the token while the client runs; the next grant presents the new one.
        try await platform.token(for: "job-b").write(to: file, atomically: true, encoding: .utf8)
        clock.advance(by: 60)
        _ = try await me.request()
        let counts = try await Server.tokenRequests(client)
        #expect(counts[JWTBearerFlow.grantType] == 2, "\(counts)")
        #expect(counts["jwt-bearer sub:job-a"] == 1 && counts["jwt-bearer sub:job-b"] == 1, "\(counts)")
        #expect(counts["refresh_token"] == nil, "no refresh token was issued: the grant ran again")
    }

    @Test func aTokenSignedByAnUntrustedKeyIsRefusedAndAnExpiredOneIsNotSent() async throws {
        let platform = Platform()
        let client = try await platform.register()
        let forged = try await platform.token(for: "intruder", signedWith: ES256PrivateKey())
        let flow = JWTBearerFlow(
            tokenEndpoint: try Server.tokenEndpoint, client: .none(id: client.id), assertion: .fixed(forged))
        let context = AuthenticationContext(transport: URLSessionTransport(), allowsInsecureHTTP: true)
        let refused = await #expect(throws: OAuthError.self) { try await flow.obtainToken(for: context) }
        #expect(refused?.code == .invalidGrant, "the server checked the signature: \(String(describing: refused))")

        let expired = try await platform.token(for: "stale", expiresIn: -120)
        let stale = JWTBearerFlow(
            tokenEndpoint: try Server.tokenEndpoint, client: .none(id: client.id), assertion: .fixed(expired))
        let error = await #expect(throws: AssertionError.self) { try await stale.obtainToken(for: context) }
        #expect(error?.code == .expired)
        #expect(try await Server.tokenRequests(client)[JWTBearerFlow.grantType] == 1, "only the forged one was sent")
    }

    @Test func anAssertionTheClientSignsForASubjectIsAccepted() async throws {
        // The client is its own platform here: its key signs, its id is the issuer.
        let platform = Platform()
        let client = try await platform.register()
        let flow = JWTBearerFlow(
            tokenEndpoint: try Server.tokenEndpoint, client: .none(id: client.id),
            assertion: .signed(
                by: PrivateKeyJWT(key: platform.key), issuer: platform.issuer, subject: "alice",
                tokenEndpoint: try Server.tokenEndpoint))
        let context = AuthenticationContext(transport: URLSessionTransport(), allowsInsecureHTTP: true)
        let token = try await flow.obtainToken(for: context)
        #expect(!token.accessToken.isEmpty && token.refreshToken == nil)
        #expect(try await Server.tokenRequests(client)["jwt-bearer sub:alice"] == 1)
    }

    /// A process of the helper: the JWT bearer grant with the token file, its token in `store`,
    /// `count` concurrent GETs.
    func workload(_ client: TestAuthorizationServer.Client, file: URL, store: URL, count: Int) async throws
        -> TestHelperProcess.Outcome
    {
        try await TestHelperProcess.run([
            "jwt-bearer-requests", store.path, try Server.tokenEndpoint.absoluteString, client.id, file.path,
            try Server.base.appendingPathComponent("api/me").absoluteString, "\(count)",
        ])
    }

    @Test func eightConcurrentCallsInEachOfThreeProcessesCauseOneGrantPerExpiry() async throws {
        let platform = Platform()
        let client = try await platform.register()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("token")
        let store = folder.appendingPathComponent("store")
        try await platform.token(for: "job-a").write(to: file, atomically: true, encoding: .utf8)
        let first = try await workload(client, file: file, store: store, count: 1)
        #expect(first.json?["successes"] as? Int == 1, "\(first.output)")

        // The stored token expires (as time would: the server's live 30 s), and the platform
        // rotates the workload's token; three processes of eight calls each then need a token.
        let key = JWTBearerFlow(
            tokenEndpoint: try Server.tokenEndpoint, client: .none(id: client.id), assertion: .fixed("")
        ).storeKey
        let tokens = FileTokenStore(directory: store)
        var token = try JSONDecoder().decode(OAuthToken.self, from: try #require(try await tokens.load(forKey: key)))
        token.expiresAt = Date().addingTimeInterval(-1)
        token.issuedAt = Date().addingTimeInterval(-31)
        try await tokens.save(try JSONEncoder().encode(token), forKey: key)
        try await platform.token(for: "job-b").write(to: file, atomically: true, encoding: .utf8)
        let outcomes = try await withThrowingTaskGroup(of: TestHelperProcess.Outcome.self) { group in
            for _ in 0..<3 { group.addTask { try await workload(client, file: file, store: store, count: 8) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let successes = outcomes.map { $0.json?["successes"] as? Int ?? 0 }.reduce(0, +)
        #expect(successes == 24, "\(outcomes.map(\.output))")
        let counts = try await Server.tokenRequests(client)
        #expect(counts[JWTBearerFlow.grantType] == 2, "one grant to start, one for the expiry: \(counts)")
        #expect(counts["jwt-bearer sub:job-b"] == 1, "the rotated token, once: \(counts)")
    }

    @Test func anAuthreqWorkloadProfileSignsInWithoutABrowserAndFollowsTheRotatedFile() async throws {
        let platform = Platform()
        let client = try await platform.register()
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let file = tool.home.appendingPathComponent("workload-token")
        try await platform.token(for: "cli-a").write(to: file, atomically: true, encoding: .utf8)
        let added = try await tool.run([
            "profile", "add", "default", "--issuer", try Server.base.absoluteString, "--client-id", client.id,
            "--assertion-file", file.path,
        ])
        #expect(added.status == 0, "\(added.stderr)")
        let login = try await tool.run(["login"])
        #expect(login.status == 0, "\(login.stderr)")
        #expect(!login.stderr.contains("Opening the browser"), "no browser: \(login.stderr)")
        let first = try await tool.run(["token"])
        #expect(first.status == 0 && !first.stdout.isEmpty, "\(first.stderr)")

        // The stored token expires (as time would) and the platform rotates the file: a new
        // process grants again with the new token, no browser.
        let store = FileTokenStore(directory: tool.home.appendingPathComponent("state/authreq/tokens"))
        let key = JWTBearerFlow(
            tokenEndpoint: try Server.tokenEndpoint, client: .none(id: client.id), assertion: .fixed("")
        ).storeKey
        var token = try JSONDecoder().decode(OAuthToken.self, from: try #require(try await store.load(forKey: key)))
        token.expiresAt = Date().addingTimeInterval(-1)
        token.issuedAt = Date().addingTimeInterval(-31)
        try await store.save(try JSONEncoder().encode(token), forKey: key)
        try await platform.token(for: "cli-b").write(to: file, atomically: true, encoding: .utf8)
        let second = try await tool.run(["token"])
        #expect(second.status == 0 && second.stdout != first.stdout, "\(second.stderr)")
        let counts = try await Server.tokenRequests(client)
        #expect(counts[JWTBearerFlow.grantType] == 2, "\(counts)")
        #expect(counts["jwt-bearer sub:cli-a"] == 1 && counts["jwt-bearer sub:cli-b"] == 1, "\(counts)")
    }
}
