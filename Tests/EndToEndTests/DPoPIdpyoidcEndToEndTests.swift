import AuthenticatedRequests
import CodeFlowOAuth
import DPoP
import Foundation
import JWTKit
import OAuthFlows
import OpenIDConnect
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the strict DPoP resource of `Tests/OpenIDProvider/server.py` answers.
struct DPoPResourceReply: Decodable, Sendable {
    let sub: String?
    let jkt: String
    let method: String
}

/// `GET` or `POST` `/test/dpop-resource` of the DPoP instance, with a query the proof must leave out.
struct DPoPResourceCall: AuthenticatedResource {
    typealias Output = DPoPResourceReply
    let authenticator: any RequestAuthenticator
    var httpMethod: RequestMethod = .get
    func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(
            url: try IdpyoidcProvider.dpop.base.appendingPathComponent("test/dpop-resource").appending(
                queryItems: [URLQueryItem(name: "view", value: "full")]))
    }
}

/// The system clock moved on by the test, so that tokens of a real server expire without a wait.
/// (The proofs keep the system clock: a prover has its own.)
final class AdvancingClock: WallClock {
    private let offset = Locked<TimeInterval>(0)
    var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }
    func advance(by seconds: TimeInterval) { offset.withLock { $0 += seconds } }
}

/// DPoP (RFC 9449) and PAR (RFC 9126) against idpyoidc 5.0.0: the DPoP instance requires pushed
/// requests and proofs at its token endpoint; the plain instance takes a `private_key_jwt` push.
///
/// idpyoidc 5.0.0's own DPoP resource check wants `ath` as a hex digest, so resources are checked
/// by the script's strict resource instead (base64url `ath`, `jti` replay, `iat` window,
/// `cnf.jkt`, nonces); the SDK stays as RFC 9449 says.
@Suite(.serialized, .enabled(if: IdpyoidcProvider.dpop.isConfigured, IdpyoidcProvider.dpop.notRunReason))
struct DPoPIdpyoidcEndToEndTests {
    let redirectURI = URL(string: "http://127.0.0.1/callback")!
    let provider = IdpyoidcProvider.dpop

    func configuration(client: ClientAuthentication, on instance: IdpyoidcProvider, pushes: Bool = false)
        async throws -> AuthenticationConfiguration
    {
        let metadata = try await AuthorizationServerMetadata.discover(
            issuer: try instance.base, document: .openIDConfiguration)
        return try AuthenticationConfiguration(
            metadata: metadata, client: client, redirectURI: redirectURI, scope: "openid profile offline_access",
            // idpyoidc issues refresh tokens for offline_access, which OpenID Connect pairs with consent.
            additionalParameters: ["prompt": "consent"],
            pushesAuthorizationRequests: pushes,
            // idpyoidc 5.0.0 checks these next to request_uri too (RFC 9126 needs only client_id).
            parametersRepeatedInBrowser: ["response_type", "scope", "redirect_uri", "prompt"])
    }

    /// Signs in with `CodeFlowManager.signIn(configuring:)`, which proves with the authenticator's
    /// DPoP prover.
    func signIn(_ configuration: AuthenticationConfiguration, into authenticator: OAuthAuthenticator) async throws
        -> OAuthToken
    {
        let manager = CodeFlowManager(
            configuration: configuration, userAgent: LoopbackUserAgent(opener: CookieBrowser(), timeout: 30))
        return try await manager.signIn(configuring: authenticator)
    }

    func jkt(of token: String, kind: String = "access_token") async throws -> String? {
        try await provider.json("test/introspect-jkt", method: "POST", body: ["token": token, "kind": kind])["jkt"]
            as? String
    }

    func stats(_ key: String, on instance: IdpyoidcProvider? = nil) async throws -> [String: Int] {
        (try await (instance ?? provider).json("test/stats/\(key)")).compactMapValues { $0 as? Int }
    }

    @Test func theCodeFlowIsPushedAndItsTokensAndTheirRefreshAreBoundToTheKey() async throws {
        let client = try await provider.makeClient()
        let configuration = try await configuration(
            client: .clientSecretBasic(id: client.id, secret: client.secret), on: provider)
        #expect(configuration.pushedAuthorizationRequestEndpoint != nil, "the server requires PAR: used unasked")
        let clock = AdvancingClock()
        let authenticator = OAuthAuthenticator(
            store: InMemoryTokenStore(), configuration: .init(clock: clock, proofOfPossession: DPoPProver()))
        let token = try await signIn(configuration, into: authenticator)
        #expect(token.tokenType == "DPoP")
        let key = try #require(token.boundKey)
        #expect(try await jkt(of: token.accessToken) == key.thumbprint, "cnf.jkt is the key's RFC 7638 thumbprint")
        var counts = try await stats(client.id)
        #expect(counts["par"] == 1)
        #expect(counts["authorization_with_request_uri"] == 1)
        #expect(counts["authorization_code"] == 1)

        // The refresh grant through the engine, with the same key: idpyoidc demands a proof there
        // and binds the new token again.
        clock.advance(by: 700)
        let refreshed = try await authenticator.validCredential()
        #expect(refreshed.tokenType == "DPoP")
        #expect(refreshed.accessToken != token.accessToken)
        #expect(refreshed.boundKey == key)
        #expect(try await jkt(of: refreshed.accessToken) == key.thumbprint)
        counts = try await stats(client.id)
        #expect(counts["refresh_token"] == 1)
    }

    @Test func noncesAtTheTokenEndpointAndTheStrictResourceAreAnsweredOnceEach() async throws {
        let client = try await provider.makeClient(dpopNonce: true)
        let configuration = try await configuration(
            client: .clientSecretBasic(id: client.id, secret: client.secret), on: provider)
        let store = InMemoryTokenStore()
        let clock = AdvancingClock()
        let authenticator = OAuthAuthenticator(
            store: store, configuration: .init(clock: clock, proofOfPossession: DPoPProver()))
        let token = try await signIn(configuration, into: authenticator)
        #expect(token.tokenType == "DPoP")
        var counts = try await stats(client.id)
        #expect(counts["use_dpop_nonce"] == 1, "the exchange was answered with a nonce once")
        #expect(counts["authorization_code"] == 1, "the code was exchanged once: the nonce demand came first")

        let before = try await stats("_resource")
        let reply = try await DPoPResourceCall(authenticator: authenticator).request()
        #expect(reply.jkt == token.boundKey?.thumbprint)
        #expect(reply.method == "GET")
        let post = try await DPoPResourceCall(authenticator: authenticator, httpMethod: .post).request()
        #expect(post.method == "POST")
        let after = try await stats("_resource")
        #expect(
            (after["use_dpop_nonce"] ?? 0) - (before["use_dpop_nonce"] ?? 0) == 1,
            "one nonce round trip, then remembered")
        #expect((after["ok"] ?? 0) - (before["ok"] ?? 0) == 2)
        #expect(
            after["invalid_dpop_proof"] == before["invalid_dpop_proof"], "ath, htu, iat and jti passed the strict check"
        )
        counts = try await stats(client.id)
        #expect(counts["refresh_token"] == nil, "a nonce is not a refresh")

        // Another launch: a new prover reads the key with the token from the store.
        let restoredSession = try await OAuthAuthenticator.restore(
            tokenEndpoint: configuration.tokenEndpoint, client: configuration.client, store: store,
            configuration: .init(proofOfPossession: DPoPProver()))
        let restored = try #require(restoredSession)
        #expect(try await DPoPResourceCall(authenticator: restored).request().jkt == token.boundKey?.thumbprint)

        // A rotated nonce costs one more round trip at each place, never a loop.
        _ = try await provider.json("test/rotate-nonces", method: "POST")
        clock.advance(by: 700)
        let refreshed = try await authenticator.validCredential()
        #expect(refreshed.boundKey == token.boundKey)
        #expect(try await stats(client.id)["use_dpop_nonce"] == 2)
        let beforeRotation = try await stats("_resource")["use_dpop_nonce"] ?? 0
        _ = try await DPoPResourceCall(authenticator: authenticator).request()
        #expect(try await stats("_resource")["use_dpop_nonce"] == beforeRotation + 1)
    }

    @Test func theStrictResourceRefusesAReplayedProof() async throws {
        let client = try await provider.makeClient()
        let configuration = try await configuration(
            client: .clientSecretBasic(id: client.id, secret: client.secret), on: provider)
        let authenticator = OAuthAuthenticator(
            store: InMemoryTokenStore(), configuration: .init(proofOfPossession: DPoPProver()))
        _ = try await signIn(configuration, into: authenticator)
        _ = try await DPoPResourceCall(authenticator: authenticator).request()  // learns the nonce
        // The same proof twice, as an attacker who copied a request would send it.
        var request = try DPoPResourceCall(authenticator: authenticator).urlRequest(using: ())
        try await authenticator.authenticate(&request)
        let (_, first) = try await URLSession.shared.data(for: request)
        let (_, second) = try await URLSession.shared.data(for: request)
        #expect((first as? HTTPURLResponse)?.statusCode == 200)
        let refused = try #require(second as? HTTPURLResponse)
        #expect(refused.statusCode == 401)
        let challenge = AuthenticationChallenge.parse(refused.value(forHTTPHeaderField: "WWW-Authenticate") ?? "")
        #expect(challenge.first?.error.map { OAuthErrorCode(rawValue: $0) } == .invalidDPoPProof)
    }

    @Test func privateKeyJWTAuthenticatesThePushedRequest() async throws {
        let plain = IdpyoidcProvider.plain
        let key = ES256PrivateKey()
        let parameters = try #require(key.publicKey.parameters)
        let jwks: [String: Any] = [
            "keys": [
                ["kty": "EC", "crv": "P-256", "kid": "par-key", "use": "sig", "x": parameters.x, "y": parameters.y]
            ]
        ]
        let client = try await plain.makeClient(jwks: jwks)
        let signer = PrivateKeyJWT(key: key, keyID: "par-key", audience: .endpoint)  // idpyoidc 5 refuses the issuer
        let configuration = try await configuration(
            client: .assertion(id: client.id, signer: signer), on: plain, pushes: true)
        let token = try await signIn(configuration, into: OAuthAuthenticator(store: InMemoryTokenStore()))
        #expect(token.isBearer, "the plain instance has no DPoP")
        let counts = try await stats(client.id, on: plain)
        #expect(counts["par"] == 1)
        #expect(counts["par_auth_jwt-bearer"] == 1, "the push carried a client assertion")
        #expect(counts["authorization_with_request_uri"] == 1)
        #expect(counts["authorization_code"] == 1)
    }
}
