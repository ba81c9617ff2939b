import AuthenticatedRequests
import CodeFlowOAuth
import Crypto
import Foundation
import JWTKit
import OAuthFlows
import Testing

@testable import OpenIDConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A user agent that approves at once: it reads the request's `state` and `nonce` and returns
/// the redirect with a code.
struct ApprovingUserAgent: AuthorizationUserAgent {
    let seen = Locked<[String: String]>([:])

    func begin(redirectURI: URL) async throws -> any AuthorizationUserAgentSession {
        Session(redirectURI: redirectURI, seen: seen)
    }

    struct Session: AuthorizationUserAgentSession {
        let redirectURI: URL
        let seen: Locked<[String: String]>
        func present(_ authorizationURL: URL) async throws -> URL {
            try await approve(authorizationURL, state: nil)
        }
        /// A pushed request's URL has no `state`: the flow names it.
        func present(_ authorizationURL: URL, state: String) async throws -> URL {
            try await approve(authorizationURL, state: state)
        }
        func approve(_ authorizationURL: URL, state expected: String?) async throws -> URL {
            let items = URLComponents(url: authorizationURL, resolvingAgainstBaseURL: false)?.queryItems ?? []
            let query = Dictionary(items.map { ($0.name, $0.value ?? "") }) { first, _ in first }
            seen.withLock { $0 = query }
            let state = expected ?? query["state"] ?? ""
            return URL(string: "\(redirectURI.absoluteString)?code=the-code&state=\(state)")!
        }
        func close() async {}
    }
}

/// The OpenID Connect sign-in, UserInfo, logout and client assertions, in memory.
@Suite struct OpenIDClientTests {
    let provider: TestProvider

    init() throws { provider = try TestProvider() }

    func metadata() throws -> AuthorizationServerMetadata {
        func string(_ path: String) -> JSONValue { .string(TestProvider.issuer + path) }
        return try AuthorizationServerMetadata(fields: [
            "issuer": .string(TestProvider.issuer), "authorization_endpoint": string("/authorize"),
            "token_endpoint": string("/token"), "jwks_uri": string("/jwks"), "userinfo_endpoint": string("/userinfo"),
            "end_session_endpoint": string("/logout"),
            "id_token_signing_alg_values_supported": .array([.string("ES256")]),
        ])
    }

    func client() throws -> OpenIDClient {
        OpenIDClient(
            provider: try OpenIDProvider(metadata: try metadata(), context: provider.context),
            client: .none(id: TestProvider.clientID), context: provider.context)
    }

    /// The token endpoint answers with an ID token whose nonce is `nonce(seen)`.
    func serveTokens(_ agent: ApprovingUserAgent, nonce: @escaping @Sendable ([String: String]) -> String?) {
        let provider = self.provider
        provider.routes.withLock {
            $0["/token"] = { request in
                let seen = agent.seen.withLock { $0 }
                var changes: [String: JSONValue] = [:]
                changes["nonce"] = nonce(seen).map(JSONValue.string) ?? .null
                let claims = provider.claims(changes)
                let idToken = try await provider.token(claims)
                let body =
                    #"{"access_token":"at-1","token_type":"Bearer","expires_in":300,"refresh_token":"rt-1","id_token":"\#(idToken)"}"#
                return try InMemoryTransport.reply(
                    to: request, headers: ["Content-Type": "application/json"], body: Data(body.utf8))
            }
        }
    }

    @Test func signInSendsANonceAndPKCEAndKeepsTheValidatedClaimsWithTheSession() async throws {
        let agent = ApprovingUserAgent()
        serveTokens(agent) { $0["nonce"] }
        let authenticator = OAuthAuthenticator(store: InMemoryTokenStore())
        let session = try await client().signIn(
            redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "profile email",
            request: OpenIDAuthenticationRequest(
                prompt: "login", maxAge: 600, loginHint: "ada", uiLocales: "en", acrValues: "urn:mfa"),
            userAgent: agent, configuring: authenticator)
        #expect(session.claims.subject == "user-42")
        let sent = agent.seen.withLock { $0 }
        #expect(sent["scope"] == "openid profile email")
        #expect((sent["nonce"]?.count ?? 0) >= 43, "256 bits")
        #expect(sent["code_challenge_method"] == "S256")
        #expect(sent["prompt"] == "login")
        #expect(sent["max_age"] == "600")
        #expect(sent["login_hint"] == "ada")
        #expect(sent["ui_locales"] == "en")
        #expect(sent["acr_values"] == "urn:mfa")
        #expect(try await authenticator.currentCredential()?.idTokenClaims?.subject == "user-42")
    }

    @Test(arguments: [true, false])
    func signInChecksTheCodeHashOfTheIDToken(matching: Bool) async throws {
        let agent = ApprovingUserAgent()
        let provider = self.provider
        provider.routes.withLock {
            $0["/token"] = { request in
                let nonce = agent.seen.withLock { $0["nonce"] }
                let hash = IDTokenValidator.leftHalfHash(of: matching ? "the-code" : "another-code", algorithm: "ES256")
                let idToken = try await provider.token(
                    provider.claims(["nonce": nonce.map(JSONValue.string) ?? .null, "c_hash": .string(hash)]))
                let body = #"{"access_token":"at-1","token_type":"Bearer","id_token":"\#(idToken)"}"#
                return try InMemoryTransport.reply(to: request, json: body)
            }
        }
        let authenticator = OAuthAuthenticator(store: InMemoryTokenStore())
        let signIn = {
            try await self.client().signIn(
                redirectURI: URL(string: "http://127.0.0.1/callback")!, userAgent: agent, configuring: authenticator)
        }
        if matching {
            #expect(try await signIn().claims.subject == "user-42")
        } else {
            let error = await #expect(throws: IDTokenValidationError.self) { try await signIn() }
            #expect(error?.rule == .tokenHash)
            #expect(try await authenticator.currentCredential() == nil)
        }
    }

    @Test func signInPushesTheRequestAndSendsResourcesOnTheExchangeAndEveryRefresh() async throws {
        let agent = ApprovingUserAgent()
        let provider = self.provider
        let tokenForms = Locked<[String]>([])
        let pushed = Locked<[String]>([])
        provider.routes.withLock {
            $0["/par"] = { request in
                pushed.withLock { $0.append(String(decoding: request.httpBody ?? Data(), as: UTF8.self)) }
                return try InMemoryTransport.reply(
                    to: request, status: 201, json: #"{"request_uri":"urn:par:1","expires_in":60}"#)
            }
            $0["/token"] = { request in
                tokenForms.withLock { $0.append(String(decoding: request.httpBody ?? Data(), as: UTF8.self)) }
                let idToken = try await provider.token(provider.claims(["nonce": .null]))
                let body =
                    #"{"access_token":"at-1","token_type":"Bearer","expires_in":300,"refresh_token":"rt-1","id_token":"\#(idToken)"}"#
                return try InMemoryTransport.reply(to: request, json: body)
            }
        }
        var fields = try metadata().fields
        fields["pushed_authorization_request_endpoint"] = .string(TestProvider.issuer + "/par")
        let client = OpenIDClient(
            provider: try OpenIDProvider(
                metadata: try AuthorizationServerMetadata(fields: fields), context: provider.context),
            client: .none(id: TestProvider.clientID), options: .init(), context: provider.context)
        let authenticator = OAuthAuthenticator(store: InMemoryTokenStore(), configuration: .init(clock: provider.clock))
        let api = URL(string: "https://api.example.com/")!
        // The nonce is checked: the ID token above carries none, so the sign-in is refused after
        // the exchange; what was sent is what this test reads.
        _ = try? await client.signIn(
            redirectURI: URL(string: "http://127.0.0.1/callback")!, userAgent: agent, configuring: authenticator,
            resources: [api], pushesAuthorizationRequests: true)
        #expect(pushed.withLock { $0 }.first?.contains("resource=https%3A%2F%2Fapi.example.com%2F") == true)
        #expect(agent.seen.withLock { $0["request_uri"] } == "urn:par:1", "the browser opened the pushed request")
        #expect(tokenForms.withLock { $0 }.first?.contains("resource=https%3A%2F%2Fapi.example.com%2F") == true)
        let flow = try client.sessionFlow(resources: [api])
        #expect(flow.endpoint.resources == [api], "refreshes send the resources too")
    }

    @Test func signOutRevokesAtTheEndpointOnlyTheRFC8414DocumentNames() async throws {
        let provider = self.provider
        let revoked = Locked<[String]>([])
        provider.routes.withLock {
            $0["/.well-known/oauth-authorization-server"] = { request in
                try InMemoryTransport.reply(
                    to: request,
                    json:
                        #"{"issuer":"\#(TestProvider.issuer)","token_endpoint":"\#(TestProvider.issuer)/token","revocation_endpoint":"\#(TestProvider.issuer)/revoke"}"#
                )
            }
            $0["/revoke"] = { request in
                revoked.withLock { $0.append(String(decoding: request.httpBody ?? Data(), as: UTF8.self)) }
                return try InMemoryTransport.reply(to: request, body: Data())
            }
        }
        let authenticator = OAuthAuthenticator(
            store: InMemoryTokenStore(), configuration: .init(tokenTransport: provider.context.transport))
        await authenticator.setCredential(OAuthToken(accessToken: "at-1", refreshToken: "rt-1"))
        try await client().signOut(authenticator)
        #expect(revoked.withLock { $0 }.contains { $0.contains("token=rt-1") }, "\(revoked.withLock { $0 })")
        #expect(try await authenticator.currentCredential() == nil)
    }

    @Test func theTransportIsSetOnceOnTheAuthenticator() async throws {
        // No `context:` anywhere but the authenticator's configuration: discovery, sign-in
        // (with a CodeFlowManager and with an OpenIDClient) all go over the authenticator's
        // in-memory transport; the shared URLSession would fail to reach op.example.com.
        let agent = ApprovingUserAgent()
        serveTokens(agent) { $0["nonce"] }
        let provider = self.provider
        provider.routes.withLock {
            $0["/.well-known/openid-configuration"] = { request in
                let body = try JSONEncoder().encode(JSONValue.object(try self.metadata().fields))
                return try InMemoryTransport.reply(to: request, body: body)
            }
        }
        let authenticator = OAuthAuthenticator(
            store: InMemoryTokenStore(),
            configuration: .init(clock: provider.clock, tokenTransport: provider.context.transport))
        let discovered = try await AuthorizationServerMetadata.discover(
            issuer: URL(string: TestProvider.issuer)!, document: .openIDConfiguration, using: authenticator)
        #expect(discovered.issuer == TestProvider.issuer)
        let openID = OpenIDClient(
            provider: try OpenIDProvider(metadata: discovered, context: provider.context),
            client: .none(id: TestProvider.clientID))
        let session = try await openID.signIn(
            redirectURI: URL(string: "http://127.0.0.1/callback")!, userAgent: agent, configuring: authenticator)
        #expect(session.claims.subject == "user-42")
        let manager = CodeFlowManager(
            configuration: try AuthenticationConfiguration(
                metadata: discovered, client: .none(id: TestProvider.clientID),
                redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "openid"),
            userAgent: agent)
        let token = try await manager.signIn(configuring: authenticator)
        #expect(token.accessToken == "at-1")
    }

    @Test func aReplayedNonceStopsTheSignInAndNothingIsStored() async throws {
        let agent = ApprovingUserAgent()
        serveTokens(agent) { _ in "a-nonce-from-another-request" }
        let store = InMemoryTokenStore()
        let authenticator = OAuthAuthenticator(store: store)
        let error = await #expect(throws: IDTokenValidationError.self) {
            try await client().signIn(
                redirectURI: URL(string: "http://127.0.0.1/callback")!, userAgent: agent, configuring: authenticator)
        }
        #expect(error?.rule == .nonce)
        #expect(try await authenticator.currentCredential() == nil)
    }

    @Test func userInfoIsAcceptedOnlyForTheSameSubject() async throws {
        let agent = ApprovingUserAgent()
        serveTokens(agent) { $0["nonce"] }
        let authenticator = OAuthAuthenticator(store: InMemoryTokenStore())
        let oidc = try client()
        _ = try await oidc.signIn(
            redirectURI: URL(string: "http://127.0.0.1/callback")!, userAgent: agent, configuring: authenticator)
        let subject = Locked("user-42")
        provider.routes.withLock {
            $0["/userinfo"] = { request in
                #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer at-1")
                let body = #"{"sub":"\#(subject.withLock { $0 })","email":"ada@example.com"}"#
                return try InMemoryTransport.reply(
                    to: request, headers: ["Content-Type": "application/json"], body: Data(body.utf8))
            }
        }
        #expect(try await oidc.userInfo(using: authenticator)["email"] == .string("ada@example.com"))
        subject.withLock { $0 = "user-7" }
        let error = await #expect(throws: OpenIDConnectError.self) { try await oidc.userInfo(using: authenticator) }
        #expect(error?.code == .subjectMismatch)
    }

    @Test func theEndSessionURLCarriesTheHintTheRedirectAndState() throws {
        let url = try client().endSessionURL(
            idTokenHint: "header.payload.signature", postLogoutRedirectURI: URL(string: "http://127.0.0.1:9/bye"),
            state: "s1")
        let items = Dictionary(
            (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map {
                ($0.name, $0.value ?? "")
            }
        ) { a, _ in a }
        #expect(url.path == "/logout")
        #expect(
            items == [
                "id_token_hint": "header.payload.signature", "client_id": TestProvider.clientID,
                "post_logout_redirect_uri": "http://127.0.0.1:9/bye", "state": "s1",
            ])
    }

    @Test func aRefreshWithoutAnIDTokenKeepsTheSessionsAndOneWithAnotherSubjectIsRefused() async throws {
        let oidc = try client()
        let first = try await provider.token(provider.claims(["nonce": .null]))
        let token = OAuthToken(accessToken: "at-1", expiresAt: provider.clock.now, refreshToken: "rt-1", idToken: first)
        let reply = Locked(#"{"access_token":"at-2","token_type":"Bearer","expires_in":300}"#)
        provider.routes.withLock {
            $0["/token"] = { request in
                try InMemoryTransport.reply(
                    to: request, headers: ["Content-Type": "application/json"], body: Data(reply.withLock { $0 }.utf8))
            }
        }
        let refreshed = try await oidc.sessionFlow().refresh(token, for: provider.context)
        #expect(refreshed.idToken == first)
        #expect(refreshed.idTokenClaims?.subject == "user-42")
        let other = try await provider.token(provider.claims(["sub": .string("user-7"), "nonce": .null]))
        reply.withLock {
            $0 = #"{"access_token":"at-3","token_type":"Bearer","expires_in":300,"id_token":"\#(other)"}"#
        }
        let error = await #expect(throws: IDTokenValidationError.self) {
            try await oidc.sessionFlow().refresh(token, for: provider.context)
        }
        #expect(error?.rule == .subject)
    }

    // MARK: Client assertions

    @Test func privateKeyJWTIsSignedForTheIssuerAsRFC10070SaysWithAFreshJTI() async throws {
        let key = ES256PrivateKey()
        let signer = PrivateKeyJWT(key: key, keyID: "k1", clock: provider.clock)
        let endpoint = URL(string: "https://op.example.com/token")!
        let issuer = "https://op.example.com"
        let first = try await signer.assertion(clientID: "svc", endpoint: endpoint, issuer: issuer)
        let second = try await signer.assertion(clientID: "svc", endpoint: endpoint, issuer: issuer)
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key.publicKey, kid: "k1")
        let claims = try await keys.verify(first, as: RawClaims.self).claims
        #expect(claims["iss"] == .string("svc"))
        #expect(claims["sub"] == .string("svc"))
        #expect(claims["aud"] == .string(issuer))  // the issuer, a single string
        let issued = try #require(claims["iat"]?.doubleValue)
        #expect(issued == provider.clock.now.timeIntervalSince1970.rounded(.down))
        #expect(claims["exp"]?.doubleValue == issued + 60)
        let secondClaims = try await keys.verify(second, as: RawClaims.self).claims
        #expect(secondClaims["jti"] != claims["jti"])
        let header = try CompactJWS(first)
        #expect(header.keyID == "k1")
        #expect(header.algorithm == "ES256")
        #expect(header.header["typ"] == .string("client-authentication+jwt"))
    }

    @Test func theOldEndpointAudienceIsAnExplicitOptionWithTypeJWT() async throws {
        let key = ES256PrivateKey()
        let endpoint = URL(string: "https://op.example.com/token")!
        let legacy = PrivateKeyJWT(key: key, audience: .endpoint, clock: provider.clock)
        let jws = try CompactJWS(
            try await legacy.assertion(clientID: "svc", endpoint: endpoint, issuer: "https://op.example.com"))
        #expect(jws.claims["aud"] == .string("https://op.example.com/token"))
        #expect(jws.header["typ"] == .string("JWT"))
        let named = PrivateKeyJWT(key: key, audience: .issuer("https://other.example.com"), clock: provider.clock)
        let namedJWS = try CompactJWS(try await named.assertion(clientID: "svc", endpoint: endpoint, issuer: nil))
        #expect(namedJWS.claims["aud"] == .string("https://other.example.com"))
        #expect(namedJWS.header["typ"] == .string("client-authentication+jwt"))
        let hmac = ClientSecretJWT(secret: "a-client-secret-of-more-than-32-bytes", clock: provider.clock)
        let hmacJWS = try CompactJWS(
            try await hmac.assertion(clientID: "svc", endpoint: endpoint, issuer: "https://op.example.com"))
        #expect(hmacJWS.claims["aud"] == .string("https://op.example.com"))
        #expect(hmacJWS.header["typ"] == .string("client-authentication+jwt"))
    }

    @Test func anAssertionForAnUnknownIssuerIsRefusedBeforeAnythingIsSent() async throws {
        let sent = Locked(0)
        provider.routes.withLock {
            $0["/token"] = { request in
                sent.withLock { $0 += 1 }
                return try InMemoryTransport.reply(to: request, json: #"{"access_token":"at","token_type":"Bearer"}"#)
            }
        }
        let client = ClientAuthentication.assertion(id: "svc", signer: PrivateKeyJWT(key: ES256PrivateKey()))
        let flow = ClientCredentialsFlow(tokenEndpoint: URL(string: "https://op.example.com/token")!, client: client)
        let error = await #expect(throws: OpenIDConnectError.self) { try await flow.obtainToken(for: provider.context) }
        #expect(error?.code == .missingIssuer)
        #expect(sent.withLock { $0 } == 0)
        // Given the issuer, the same client authenticates.
        let named = ClientAuthentication.assertion(
            id: "svc", signer: PrivateKeyJWT(key: ES256PrivateKey()), issuer: "https://op.example.com")
        _ = try await ClientCredentialsFlow(tokenEndpoint: URL(string: "https://op.example.com/token")!, client: named)
            .obtainToken(for: provider.context)
        #expect(sent.withLock { $0 } == 1)
    }

    @Test func theTokenRequestCarriesTheAssertionAndNoSecret() async throws {
        let sent = Locked<String?>(nil)
        provider.routes.withLock {
            $0["/token"] = { request in
                sent.withLock { $0 = request.httpBody.map { String(decoding: $0, as: UTF8.self) } }
                #expect(request.value(forHTTPHeaderField: "Authorization") == nil)
                return try InMemoryTransport.reply(
                    to: request, headers: ["Content-Type": "application/json"],
                    body: Data(#"{"access_token":"at","token_type":"Bearer"}"#.utf8))
            }
        }
        let secret = "a-client-secret-of-more-than-32-bytes"
        let client = ClientAuthentication.assertion(
            id: "svc", signer: ClientSecretJWT(secret: secret, clock: provider.clock), issuer: "https://op.example.com")
        #expect(client.methodName == "client_secret_jwt")
        let flow = ClientCredentialsFlow(tokenEndpoint: URL(string: "https://op.example.com/token")!, client: client)
        _ = try await flow.obtainToken(for: provider.context)
        let body = try #require(sent.withLock { $0 })
        #expect(body.contains("client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"))
        #expect(body.contains("client_assertion=ey"))
        #expect(body.contains("client_id=svc"))
        #expect(!body.contains("client_secret="))
        let short = ClientAuthentication.assertion(
            id: "svc", signer: ClientSecretJWT(secret: "short"), issuer: "https://op.example.com")
        await #expect(throws: OpenIDConnectError.self) {
            try await ClientCredentialsFlow(tokenEndpoint: URL(string: "https://op.example.com/token")!, client: short)
                .obtainToken(for: provider.context)
        }
    }
}
