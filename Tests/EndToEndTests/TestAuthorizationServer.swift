import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The Authlib server that `Scripts/test` starts; its URL comes in `AUTHREQ_TEST_SERVER`.
enum TestAuthorizationServer {
    static let environment = ProcessInfo.processInfo.environment
    static let url: URL? = environment["AUTHREQ_TEST_SERVER"].flatMap(URL.init(string:))
    static let isConfigured = url != nil
    static let notRunReason: Comment =
        "AUTHREQ_TEST_SERVER is not set, so the end-to-end tests were NOT run. Run Scripts/test to run them."

    static var base: URL {
        get throws { try #require(url, notRunReason) }
    }

    struct Client: Sendable {
        let id: String
        let secret: String?
        var basic: ClientAuthentication { .clientSecretBasic(id: id, secret: secret ?? "") }
        var post: ClientAuthentication { .clientSecretPost(id: id, secret: secret ?? "") }
        var publicClient: ClientAuthentication { .none(id: id) }
    }

    static func json(
        _ path: String,
        query: [URLQueryItem] = [],
        method: String = "GET",
        body: [String: Any]? = nil
    ) async throws -> [String: Any] {
        var components = try #require(
            URLComponents(url: try base.appendingPathComponent(path), resolvingAgainstBaseURL: false))
        if !query.isEmpty { components.queryItems = query }
        var request = URLRequest(url: try #require(components.url))
        request.httpMethod = method
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
        }
        let (data, _) = try await URLSession.shared.data(for: request)
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    /// A client of its own for one test, so parallel tests never share counts or tokens.
    /// - Parameters:
    ///   - reuseDetection: a rotated-out refresh token presented again revokes the whole grant.
    ///   - accessTokenLifetime: seconds; the server's default (an hour under `Scripts/test`) when `nil`.
    ///   - idTokenAlgorithm: how the server signs this client's ID tokens (RS256 or ES256).
    static func makeClient(
        public isPublic: Bool = false,
        deviceCodeLifetime: Int = 30,
        reuseDetection: Bool = false,
        accessTokenLifetime: Int? = nil,
        idTokenAlgorithm: String = "RS256"
    ) async throws -> Client {
        var body: [String: Any] = [
            "public": isPublic, "device_code_lifetime": deviceCodeLifetime, "device_interval": 1,
            "reuse_detection": reuseDetection, "id_token_alg": idTokenAlgorithm,
        ]
        if let accessTokenLifetime { body["access_token_lifetime"] = accessTokenLifetime }
        let reply = try await json("test/clients", method: "POST", body: body)
        return Client(id: try #require(reply["client_id"] as? String), secret: reply["client_secret"] as? String)
    }

    /// How many token requests of each grant type the server saw from `client`.
    static func tokenRequests(_ client: Client) async throws -> [String: Int] {
        try await json("test/stats/\(client.id)").compactMapValues { $0 as? Int }
    }

    /// What every process sees after another one died mid-refresh: `next` (20 requests) all
    /// succeed or all report the unknown outcome, and the server saw no rotated-out refresh token
    /// and at most one refresh.
    static func expectNoSignOutAfterACrash(next: TestHelperProcess.Outcome, client: Client) async throws {
        let successes = next.json?["successes"] as? Int ?? -1
        let errors = next.json?["errors"] as? [String: Int] ?? [:]
        #expect(successes == 20 || errors == ["refresh outcome unknown": 20], "\(next.output)")
        let counts = try await tokenRequests(client)
        #expect(counts["reuse_detected"] == nil, "no rotated-out refresh token was sent: \(counts)")
        #expect((counts["refresh_token"] ?? 0) <= 1)
    }

    static func decideDevice(userCode: String, approve: Bool) async throws {
        let reply = try await json(
            "device",
            query: [
                URLQueryItem(name: "user_code", value: userCode),
                URLQueryItem(name: "action", value: approve ? "approve" : "deny"),
            ]
        )
        #expect(reply["recorded"] as? Bool == true, "the verification page knew the user code")
    }

    static var tokenEndpoint: URL { get throws { try base.appendingPathComponent("token") } }
    static var revocationEndpoint: URL { get throws { try base.appendingPathComponent("revoke") } }

    static func metadata() async throws -> AuthorizationServerMetadata {
        try await AuthorizationServerMetadata.discover(
            issuer: try base,
            context: AuthenticationContext(transport: URLSessionTransport.shared)
        )
    }

    /// An authenticator that refreshes 1 s before expiry (for tests whose clients ask for short tokens).
    static func authenticator(flow: (any OAuthFlow)? = nil, store: InMemoryTokenStore = InMemoryTokenStore())
        -> OAuthAuthenticator
    {
        let configuration = OAuthAuthenticator.Configuration(leeway: 1)
        if let flow { return OAuthAuthenticator(flow: flow, store: store, configuration: configuration) }
        return OAuthAuthenticator(store: store, configuration: configuration)
    }

    /// Signs in a public client through the browser flow, with the simulator playing the browser.
    static func signIn(
        _ client: Client,
        into authenticator: OAuthAuthenticator,
        decision: String = "approve"
    ) async throws -> OAuthToken {
        let configuration = try AuthenticationConfiguration(
            metadata: try await metadata(),
            client: client.publicClient,
            redirectURI: URL(string: "http://127.0.0.1/callback")!,
            scope: "profile",
            additionalParameters: ["test_decision": decision]
        )
        let manager = CodeFlowManager(
            configuration: configuration,
            userAgent: LoopbackUserAgent(opener: BrowserSimulator(), timeout: 30)
        )
        return try await manager.signIn(configuring: authenticator)
    }
}

/// `GET /api/me` on the test server, a protected resource.
struct ServerMe: AuthenticatedResource {
    struct Output: Decodable, Sendable {
        let sub: String
        let name: String
    }
    let authenticator: any RequestAuthenticator

    func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(url: try TestAuthorizationServer.base.appendingPathComponent("api/me"))
    }
}

extension BrowserSimulator: BrowserOpener {}

func storedToken(_ store: InMemoryTokenStore, key: String) async throws -> OAuthToken? {
    try await store.load(forKey: key).map { try JSONDecoder().decode(OAuthToken.self, from: $0) }
}

/// Guards against a silent skip: in CI (`CI` set) the server must be there.
@Test func endToEndTestsHaveAServerInCI() {
    if TestAuthorizationServer.environment["CI"] != nil {
        #expect(TestAuthorizationServer.isConfigured, "CI must run the end-to-end tests: use Scripts/test")
    }
}
