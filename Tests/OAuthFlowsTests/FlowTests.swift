import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct ClientCredentialsFlowTests {
    let clock = TestClock()
    let server = TokenServer()

    @Test func sendsScopeAndExtraParametersAndRefreshRunsTheGrantAgain() async throws {
        let flow = ClientCredentialsFlow(
            tokenEndpoint: tokenURL,
            client: .clientSecretPost(id: "svc", secret: "pw"),
            scope: "read write",
            additionalParameters: ["resource": "https://api.example.com/", "audience": "api"]
        )
        server.reply(json: #"{"access_token":"at1","token_type":"Bearer","expires_in":60}"#)
        server.reply(json: #"{"access_token":"at2","token_type":"Bearer","expires_in":60}"#)
        let first = try await flow.obtainToken(for: server.context(clock: clock))
        let second = try await flow.refresh(first, for: server.context(clock: clock))
        #expect(first.accessToken == "at1")
        #expect(second.accessToken == "at2")
        let expected =
            "grant_type=client_credentials&scope=read+write&audience=api&resource=https%3A%2F%2Fapi.example.com%2F"
            + "&client_id=svc&client_secret=pw"
        #expect(server.requests.map(\.body) == [expected, expected])
    }

    @Test func theSeedInitializerUsesBasicAuthentication() async throws {
        let flow = ClientCredentialsFlow(
            tokenEndpoint: tokenURL, clientID: "example", clientSecret: "example", scope: "a b")
        server.reply(json: #"{"access_token":"at","token_type":"Bearer"}"#)
        _ = try await flow.obtainToken(for: server.context(clock: clock))
        #expect(server.requests.first?.body == "grant_type=client_credentials&scope=a+b")
        #expect(server.requests.first?.header("Authorization")?.hasPrefix("Basic ") == true)
    }
}

@Suite struct AuthorizationCodeFlowTests {
    let clock = TestClock()
    let server = TokenServer()

    func flow() -> AuthorizationCodeFlow {
        AuthorizationCodeFlow(
            tokenEndpoint: tokenURL,
            client: .none(id: "native-app"),
            code: "the-code",
            redirectURI: "http://127.0.0.1:53682/callback",
            codeVerifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        )
    }

    @Test func exchangesTheCodeWithRedirectURIAndVerifier() async throws {
        server.reply(json: #"{"access_token":"at","token_type":"Bearer","expires_in":300,"refresh_token":"rt"}"#)
        let token = try await flow().obtainToken(for: server.context(clock: clock))
        #expect(token.refreshToken == "rt")
        #expect(
            server.requests.first?.body
                == "grant_type=authorization_code&code=the-code&redirect_uri=http%3A%2F%2F127.0.0.1%3A53682%2Fcallback"
                + "&code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk&client_id=native-app"
        )
    }

    @Test func aCodeIsNeverSentTwiceEvenAfterAFailure() async throws {
        let flow = flow()
        server.fail(URLError(.networkConnectionLost))
        await #expect(throws: URLError.self) { try await flow.obtainToken(for: server.context(clock: clock)) }
        let error = await #expect(throws: AuthenticationError.self) {
            try await flow.obtainToken(for: server.context(clock: clock))
        }
        #expect(error?.code == .missingCredential)
        #expect(server.requests.count == 1)
    }

    @Test func laterRefreshesUseTheRefreshTokenGrant() async throws {
        let flow = flow()
        server.reply(json: #"{"access_token":"at1","token_type":"Bearer","expires_in":300,"refresh_token":"rt1"}"#)
        server.reply(json: #"{"access_token":"at2","token_type":"Bearer","expires_in":300}"#)
        let authenticator = OAuthAuthenticator(
            flow: flow,
            configuration: .init(clock: clock, tokenTransport: server.transport)
        )
        _ = try await authenticator.validCredential()
        clock.advance(by: 300)
        let refreshed = try await authenticator.validCredential()
        #expect(refreshed.accessToken == "at2")
        #expect(refreshed.refreshToken == "rt1", "no new refresh token: the old one is kept")
        #expect(server.requests.last?.body == "grant_type=refresh_token&refresh_token=rt1&client_id=native-app")
    }
}

@Suite struct RefreshTokenFlowTests {
    let clock = TestClock()
    let server = TokenServer()
    let store = InMemoryTokenStore()

    func authenticator(_ flow: RefreshTokenFlow) -> OAuthAuthenticator {
        OAuthAuthenticator(
            flow: flow, store: store, configuration: .init(clock: clock, tokenTransport: server.transport))
    }

    func stored(_ flow: RefreshTokenFlow) async throws -> OAuthToken? {
        try await store.load(forKey: flow.storeKey).map { try JSONDecoder().decode(OAuthToken.self, from: $0) }
    }

    @Test func aRotatedRefreshTokenReplacesTheOldOneInTheStoreAtOnce() async throws {
        let flow = RefreshTokenFlow(
            tokenEndpoint: tokenURL, client: .clientSecretBasic(id: "app", secret: "s"), refreshToken: "rt0")
        server.reply(
            json: #"{"access_token":"at1","token_type":"Bearer","expires_in":60,"refresh_token":"rt1","scope":"read"}"#)
        server.reply(json: #"{"access_token":"at2","token_type":"Bearer","expires_in":60,"refresh_token":"rt2"}"#)
        let authenticator = authenticator(flow)
        _ = try await authenticator.validCredential()
        #expect(try await stored(flow)?.refreshToken == "rt1")
        clock.advance(by: 60)
        let token = try await authenticator.validCredential()
        #expect(try await stored(flow)?.refreshToken == "rt2")
        #expect(token.scope == "read", "an omitted scope is the previous scope")
        #expect(
            server.requests.map(\.body) == [
                "grant_type=refresh_token&refresh_token=rt0", "grant_type=refresh_token&refresh_token=rt1",
            ])
    }

    @Test func aNarrowerScopeIsSent() async throws {
        let flow = RefreshTokenFlow(
            tokenEndpoint: tokenURL, client: .none(id: "app"), refreshToken: "rt0", scope: "read")
        server.reply(json: #"{"access_token":"at1","token_type":"Bearer"}"#)
        let token = try await flow.obtainToken(for: server.context(clock: clock))
        #expect(server.requests.first?.body == "grant_type=refresh_token&refresh_token=rt0&scope=read&client_id=app")
        #expect(token.refreshToken == "rt0")
        #expect(token.scope == "read")
    }

    @Test func invalidGrantClearsTheStoreAndAsksForReauthentication() async throws {
        let flow = RefreshTokenFlow(tokenEndpoint: tokenURL, clientID: "app", clientSecret: nil, refreshToken: "rt0")
        server.reply(json: #"{"access_token":"at1","token_type":"Bearer","expires_in":60,"refresh_token":"rt1"}"#)
        server.reply(status: 400, json: #"{"error":"invalid_grant","error_description":"refresh token revoked"}"#)
        let authenticator = authenticator(flow)
        _ = try await authenticator.validCredential()
        clock.advance(by: 60)
        let error = await #expect(throws: AuthenticationError.self) { try await authenticator.validCredential() }
        #expect(error?.code == .reauthenticationRequired)
        #expect((error?.underlyingError as? OAuthError)?.errorDescription == "refresh token revoked")
        #expect(try await stored(flow) == nil)
    }
}

@Suite struct ExtensionGrantFlowTests {
    @Test func sendsAnyGrantTypeWithItsParameters() async throws {
        let server = TokenServer()
        let flow = ExtensionGrantFlow(
            tokenEndpoint: tokenURL,
            client: .clientSecretBasic(id: "gw", secret: "s"),
            grantType: ExtensionGrantFlow.tokenExchange,
            parameters: [
                "subject_token": "upstream-token",
                "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
            ],
            scope: "orders"
        )
        server.reply(
            json:
                #"{"access_token":"at","token_type":"N_A","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#
        )
        let token = try await flow.obtainToken(for: server.context(clock: TestClock()))
        #expect(
            server.requests.first?.body
                == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token=upstream-token"
                + "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token&scope=orders"
        )
        #expect(token.additionalFields["issued_token_type"] != nil)
        #expect(!String(describing: flow).contains("upstream-token"))
    }
}
