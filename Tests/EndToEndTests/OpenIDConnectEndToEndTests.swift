import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import OpenIDConnect
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// OpenID Connect against Authlib's OpenIDCode extension: sign-in with the code flow, PKCE and a
/// nonce, RS256 and ES256 ID tokens validated rule by rule, UserInfo, a key rotation (one JWKS
/// re-fetch), refresh keeping the claims, and sign-out at the provider.
///
/// Serialized: rotating the server's keys must not race another test's sign-in.
@Suite(.serialized, .enabled(if: TestAuthorizationServer.isConfigured, TestAuthorizationServer.notRunReason))
struct OpenIDConnectAuthlibEndToEndTests {
    typealias Server = TestAuthorizationServer
    let redirectURI = URL(string: "http://127.0.0.1/callback")!

    func openID(_ client: Server.Client, keyRefetchInterval: TimeInterval = 60) async throws -> OpenIDClient {
        let provider = try await OpenIDProvider.discover(
            issuer: try Server.base, minimumKeyRefetchInterval: keyRefetchInterval)
        return OpenIDClient(provider: provider, client: client.publicClient)
    }

    func signIn(_ oidc: OpenIDClient, into authenticator: OAuthAuthenticator) async throws -> OpenIDSession {
        try await oidc.signIn(
            redirectURI: redirectURI, scope: "openid profile email",
            userAgent: LoopbackUserAgent(opener: BrowserSimulator(), timeout: 30), configuring: authenticator)
    }

    @Test(arguments: ["RS256", "ES256"])
    func signInValidatesTheIDTokenThenUserInfoAgrees(algorithm: String) async throws {
        let client = try await Server.makeClient(public: true, idTokenAlgorithm: algorithm)
        let oidc = try await openID(client)
        let store = InMemoryTokenStore()
        let authenticator = Server.authenticator(store: store)
        let session = try await signIn(oidc, into: authenticator)
        #expect(session.claims.subject == "1")
        #expect(session.claims.name == "Ada Lovelace")
        #expect(session.claims.email == "ada@example.com")
        #expect(session.claims.audiences == [client.id])
        #expect(session.token.idToken.map { $0.split(separator: ".").count } == 3)
        #expect(try await authenticator.currentCredential()?.idTokenClaims?.subject == "1", "kept with the credential")
        // Another process restores the session from the same store, claims included.
        let restored = try #require(try await oidc.restore(store: store))
        #expect(try await restored.currentCredential()?.idTokenClaims?.email == "ada@example.com")
        let info = try await oidc.userInfo(using: authenticator)
        #expect(info["sub"] == .string("1"))
        #expect(info["email"] == .string("ada@example.com"))
    }

    @Test func aStepUpForAStrongerSignInChecksTheNewIDTokensAcrAndSubject() async throws {
        let client = try await Server.makeClient(public: true)
        let oidc = try await openID(client)
        let resource = try TestResource.make()
        let authenticator = OAuthAuthenticator(store: InMemoryTokenStore())
        let browser = BrowserSimulator()
        let session = try await oidc.signIn(
            redirectURI: redirectURI, scope: "openid profile",
            userAgent: LoopbackUserAgent(opener: browser, timeout: 30), configuring: authenticator,
            resources: [resource], allowsStepUp: true)
        #expect(session.claims.raw["acr"] == nil)

        // The resource asks for acr urn:test:mfa within 60 s (RFC 9470): one new sign-in, checked.
        let reply = try await StepUpEndToEndTests.Call(
            authenticator: authenticator, url: resource.appendingPathComponent("mfa")
        ).request()
        #expect(reply.acr == "urn:test:mfa")
        let claims = try #require(try await authenticator.currentCredential()?.idTokenClaims)
        #expect(claims.raw["acr"]?.stringValue == "urn:test:mfa")
        #expect(claims.subject == session.claims.subject)
        let opened = browser.openedURLs.withLock { $0 }
        #expect(opened.count == 2)
        let query = URLComponents(url: try #require(opened.last), resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "acr_values" }?.value == "urn:test:mfa")
        #expect(query.first { $0.name == "max_age" }?.value == "60")
    }

    @Test func aRotatedSigningKeyIsFetchedOnceAndSignInGoesOn() async throws {
        let client = try await Server.makeClient(public: true, idTokenAlgorithm: "ES256")
        let oidc = try await openID(client, keyRefetchInterval: 1)
        _ = try await signIn(oidc, into: Server.authenticator())
        #expect(await oidc.provider.keys.fetchCount == 1)
        _ = try await Server.json("test/rotate-keys", method: "POST")
        try await Task.sleep(for: .seconds(1.1))  // the client's minimum re-fetch interval here
        let session = try await signIn(oidc, into: Server.authenticator())
        #expect(session.claims.subject == "1")
        #expect(await oidc.provider.keys.fetchCount == 2, "one re-fetch for the new kid")
        _ = try await signIn(oidc, into: Server.authenticator())
        #expect(await oidc.provider.keys.fetchCount == 2, "then cached again")
    }

    @Test func aRefreshKeepsTheSessionsClaims() async throws {
        let client = try await Server.makeClient(public: true, accessTokenLifetime: 4)
        let oidc = try await openID(client)
        let authenticator = Server.authenticator()
        let session = try await signIn(oidc, into: authenticator)
        try await Task.sleep(for: .seconds(3.5))  // inside the refresh window of a 4 s token
        let refreshed = try await authenticator.validCredential()
        #expect(refreshed.accessToken != session.token.accessToken)
        #expect(refreshed.idTokenClaims?.subject == "1")
        #expect(try await Server.tokenRequests(client)["refresh_token"] == 1)
    }

    @Test func signOutRevokesThenEndsTheSessionAtTheProvider() async throws {
        let client = try await Server.makeClient(public: true)
        let oidc = try await openID(client)
        let authenticator = Server.authenticator()
        let session = try await signIn(oidc, into: authenticator)
        try await oidc.signOut(
            authenticator, postLogoutRedirectURI: URL(string: "http://127.0.0.1/signed-out")!,
            userAgent: LoopbackUserAgent(opener: BrowserSimulator(), timeout: 30))
        #expect(try await authenticator.currentCredential() == nil)
        #expect(try await Server.tokenRequests(client)["logout"] == 1, "the provider's logout page was visited")
        var request = URLRequest(url: try Server.base.appendingPathComponent("api/me"))
        request.setValue("Bearer \(session.token.accessToken)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 401, "the access token was revoked")
    }
}
