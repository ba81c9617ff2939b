import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

@Suite struct DiscoveryTests {
    let server = TokenServer()

    func metadata(issuer: String) -> String {
        #"{"issuer":"\#(issuer)","authorization_endpoint":"\#(issuer)/authorize","token_endpoint":"\#(issuer)/token","#
            + #""revocation_endpoint":"\#(issuer)/revoke","device_authorization_endpoint":"\#(issuer)/device","#
            + #""token_endpoint_auth_methods_supported":["client_secret_basic","client_secret_post","none"],"#
            + #""code_challenge_methods_supported":["S256"],"authorization_response_iss_parameter_supported":true}"#
    }

    @Test func wellKnownURLsFollowRFC8414AndOpenIDDiscovery() {
        let withPath = URL(string: "https://auth.example.com/tenant/1")!
        #expect(
            AuthorizationServerMetadata.metadataURL(issuer: withPath)?.absoluteString
                == "https://auth.example.com/.well-known/oauth-authorization-server/tenant/1"
        )
        #expect(
            AuthorizationServerMetadata.metadataURL(issuer: withPath, document: .openIDConfiguration)?.absoluteString
                == "https://auth.example.com/tenant/1/.well-known/openid-configuration"
        )
        #expect(
            AuthorizationServerMetadata.metadataURL(issuer: URL(string: "https://auth.example.com")!)?.absoluteString
                == "https://auth.example.com/.well-known/oauth-authorization-server"
        )
    }

    @Test func discoversEndpointsAndBuildsFlows() async throws {
        server.reply(json: metadata(issuer: "https://auth.example.com"))
        let metadata = try await AuthorizationServerMetadata.discover(
            issuer: URL(string: "https://auth.example.com")!,
            context: server.context(clock: TestClock())
        )
        #expect(server.requests.first?.request.url?.path == "/.well-known/oauth-authorization-server")
        #expect(metadata.tokenEndpoint == URL(string: "https://auth.example.com/token"))
        #expect(metadata.codeChallengeMethodsSupported == ["S256"])
        #expect(metadata.authorizationResponseIssParameterSupported)
        #expect(metadata.tokenEndpointAuthMethodsSupported.contains("none"))
        let flow = try metadata.clientCredentialsFlow(client: .none(id: "a"))
        #expect(flow.endpoint.url == metadata.tokenEndpoint)
        #expect(try metadata.revocationEndpoint(client: .none(id: "a")).url.path == "/revoke")
    }

    @Test func metadataForAnotherIssuerIsRejected() async throws {
        server.reply(json: metadata(issuer: "https://evil.example.com"))
        let error = await #expect(throws: DiscoveryError.self) {
            try await AuthorizationServerMetadata.discover(
                issuer: URL(string: "https://auth.example.com")!,
                context: server.context(clock: TestClock())
            )
        }
        #expect(error?.code == .issuerMismatch)
        #expect(error?.issuer == "https://evil.example.com")
    }
}

@Suite struct RevocationTests {
    let clock = TestClock()
    let server = TokenServer()
    let revokeURL = URL(string: "https://auth.example.com/revoke")!

    @Test func revokesWithATokenTypeHint() async throws {
        server.reply(body: Data())
        try await RevocationEndpoint(url: revokeURL, client: .clientSecretBasic(id: "app", secret: "s"))
            .revoke("rt-1", hint: .refreshToken, context: server.context(clock: clock))
        #expect(server.requests.first?.body == "token=rt-1&token_type_hint=refresh_token")
        #expect(server.requests.first?.header("Authorization")?.hasPrefix("Basic ") == true)
    }

    func signedIn(store: InMemoryTokenStore) async throws -> OAuthAuthenticator {
        let flow = RefreshTokenFlow(tokenEndpoint: tokenURL, client: .none(id: "app"), refreshToken: "unused")
        let authenticator = OAuthAuthenticator(
            flow: flow,
            store: store,
            configuration: .init(clock: clock, tokenTransport: server.transport)
        )
        await authenticator.setCredential(OAuthToken(accessToken: "at-1", refreshToken: "rt-1"))
        return authenticator
    }

    @Test func signOutRevokesRefreshThenAccessTokenAndClearsTheStore() async throws {
        let store = InMemoryTokenStore()
        let authenticator = try await signedIn(store: store)
        server.reply(body: Data())
        server.reply(body: Data())
        try await authenticator.signOut(revokingAt: RevocationEndpoint(url: revokeURL, client: .none(id: "app")))
        #expect(
            server.requests.map(\.body) == [
                "token=rt-1&token_type_hint=refresh_token&client_id=app",
                "token=at-1&token_type_hint=access_token&client_id=app",
            ]
        )
        #expect(try await authenticator.currentCredential() == nil)
        #expect(await store.load(forKey: "app@\(tokenURL.absoluteString)") == nil)
    }

    @Test func aFailedRevocationStillClearsLocalStateAndReportsTheFailure() async throws {
        let store = InMemoryTokenStore()
        let authenticator = try await signedIn(store: store)
        server.reply(
            status: 503, headers: ["Content-Type": "application/json"], json: #"{"error":"temporarily_unavailable"}"#)
        server.fail(URLError(.timedOut))
        let error = await #expect(throws: OAuthError.self) {
            try await authenticator.signOut(revokingAt: RevocationEndpoint(url: revokeURL, client: .none(id: "app")))
        }
        #expect(error?.code == .temporarilyUnavailable)
        #expect(server.requests.count == 2, "the access token is still revoked after the refresh token failed")
        #expect(try await authenticator.currentCredential() == nil)
        #expect(await store.load(forKey: "app@\(tokenURL.absoluteString)") == nil)
    }
}

@Suite struct PKCETests {
    @Test func theRFC7636AppendixBVector() throws {
        let pkce = try PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(pkce.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(pkce.method == .s256)
    }

    @Test func randomVerifiersHaveTheRightLengthAndAlphabetAndDiffer() throws {
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let a = try PKCE()
        let b = try PKCE()
        #expect(a.verifier.count == 64)
        #expect(a.verifier.allSatisfy(unreserved.contains))
        #expect(a.verifier != b.verifier)
        #expect(try PKCE(length: 43).verifier.count == 43)
        #expect(try PKCE(length: 128).verifier.count == 128)
        #expect(throws: PKCEError.self) { try PKCE(length: 42) }
        #expect(throws: PKCEError.self) { try PKCE(length: 129) }
        #expect(throws: PKCEError.self) { try PKCE(verifier: String(repeating: "a", count: 42) + "!") }
    }

    @Test func plainOnlyWhenAskedFor() throws {
        #expect(try PKCE().method == .s256)
        let plain = try PKCE(method: .plain)
        #expect(plain.challenge == plain.verifier)
        #expect(!String(describing: plain).contains(plain.verifier))
    }
}

@Suite struct OAuthFlowsRedactionTests {
    @Test func noSecretInDescriptionsOrErrors() throws {
        let pkce = try PKCE()
        let device = DeviceAuthorizationFlow(
            deviceAuthorizationEndpoint: tokenURL,
            tokenEndpoint: tokenURL,
            client: .clientSecretPost(id: "c", secret: "client-secret-xyz"),
            onUserCode: { _ in }
        )
        let values: [Any] = [
            ClientAuthentication.clientSecretBasic(id: "c", secret: "client-secret-xyz"),
            ClientAuthentication.clientSecretPost(id: "c", secret: "client-secret-xyz"),
            AuthorizationCodeFlow(
                tokenEndpoint: tokenURL,
                client: .clientSecretPost(id: "c", secret: "client-secret-xyz"),
                code: "auth-code-xyz",
                redirectURI: "http://127.0.0.1/cb",
                codeVerifier: pkce.verifier
            ),
            pkce,
            device,
            ClientCredentialsFlow(
                tokenEndpoint: tokenURL, client: .clientSecretBasic(id: "c", secret: "client-secret-xyz")),
            RefreshTokenFlow(tokenEndpoint: tokenURL, client: .none(id: "c"), refreshToken: "refresh-xyz"),
            ExtensionGrantFlow(
                tokenEndpoint: tokenURL,
                client: .none(id: "c"),
                grantType: ExtensionGrantFlow.jwtBearer,
                parameters: ["assertion": "refresh-xyz"]
            ),
            DeviceAuthorization(
                deviceCode: "auth-code-xyz",
                userCode: "ABCD",
                verificationURI: tokenURL,
                verificationURIComplete: nil,
                expiresAt: .distantFuture,
                interval: 5
            ),
        ]
        for value in values {
            var dumped = ""
            dump(value, to: &dumped)
            for text in [String(describing: value), String(reflecting: value), dumped] {
                for secret in ["client-secret-xyz", "auth-code-xyz", pkce.verifier, "refresh-xyz"] {
                    #expect(!text.contains(secret), "\(type(of: value)) leaks: \(text)")
                }
            }
        }
    }
}
