import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

/// From `CodeFlowManager` to an authenticated request: a loopback authorization endpoint, the
/// browser simulator following its redirect to the loopback receiver, and the in-memory token
/// endpoint and API.
@Suite struct CodeFlowEndToEndTests {
    @Test func signInThenRequestThenRefreshWithTheRefreshTokenGrant() async throws {
        let clock = TestClock()
        let tokens = TokenServer()
        let api = FakeAPI(valid: ["at-1", "at-2"])
        let store = InMemoryTokenStore()
        let authorizationServer = try await makeAuthorizationServer { query in
            ["code": "code-xyz", "state": query["state"] ?? "", "iss": "https://issuer.example.com"]
        }
        defer { Task { try await authorizationServer.shutdown() } }
        tokens.reply(
            json:
                #"{"access_token":"at-1","token_type":"bearer","expires_in":300,"refresh_token":"rt-1","scope":"profile"}"#
        )
        tokens.reply(json: #"{"access_token":"at-2","token_type":"bearer","expires_in":300,"refresh_token":"rt-2"}"#)

        let manager = CodeFlowManager(
            configuration: AuthenticationConfiguration(
                authorizationEndpoint: authorizationServer.baseURL.appendingPathComponent("authorize"),
                tokenEndpoint: tokenURL,
                client: .none(id: "cli"),
                redirectURI: URL(string: "http://127.0.0.1/callback")!,
                scope: "profile",
                issuer: "https://issuer.example.com",
                requiresIssuerParameter: true
            ),
            userAgent: LoopbackUserAgent(opener: BrowserSimulator()),
            context: tokens.context(clock: clock)
        )
        let authenticator = OAuthAuthenticator(
            store: store,
            configuration: .init(clock: clock, tokenTransport: tokens.transport)
        )
        let token = try await manager.signIn(configuring: authenticator)
        #expect(token.accessToken == "at-1")

        let me = Me(authenticator: authenticator, transport: api.transport)
        #expect(try await me.request().name == "Ada")
        clock.advance(by: 300)
        #expect(try await me.request().name == "Ada")
        #expect(api.seenAuthorizations == ["Bearer at-1", "Bearer at-2"])
        #expect(tokens.requests.count == 2)
        #expect(tokens.requests[0].form["grant_type"] == "authorization_code")
        #expect(tokens.requests[0].form["code"] == "code-xyz")
        #expect(tokens.requests[1].body == "grant_type=refresh_token&refresh_token=rt-1&client_id=cli")
        let stored = try #require(await store.load(forKey: "cli@\(tokenURL.absoluteString)"))
        #expect(try JSONDecoder().decode(OAuthToken.self, from: stored).refreshToken == "rt-2")
    }
}
