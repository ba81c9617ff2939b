import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import JWTKit
import OAuthFlows
import OpenIDConnect
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An idpyoidc 5.0.0 OpenID provider that `Scripts/test` starts: ``plain`` at
/// `AUTHREQ_TEST_IDPYOIDC`, and ``dpop`` (DPoP add-on, required PAR, nonces, a strict DPoP
/// resource) at `AUTHREQ_TEST_IDPYOIDC_DPOP`.
struct IdpyoidcProvider: Sendable {
    /// The environment variable with the instance's URL.
    let variable: String

    static let plain = IdpyoidcProvider(variable: "AUTHREQ_TEST_IDPYOIDC")
    static let dpop = IdpyoidcProvider(variable: "AUTHREQ_TEST_IDPYOIDC_DPOP")

    var url: URL? { ProcessInfo.processInfo.environment[variable].flatMap(URL.init(string:)) }
    var isConfigured: Bool { url != nil }
    var notRunReason: Comment {
        "\(variable) is not set, so these idpyoidc tests were NOT run. Run Scripts/test to run them."
    }

    var base: URL { get throws { try #require(url, notRunReason) } }

    func json(_ path: String, method: String = "GET", body: [String: Any]? = nil) async throws -> [String: Any] {
        var request = URLRequest(url: try base.appendingPathComponent(path))
        request.httpMethod = method
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
        }
        let (data, _) = try await URLSession.shared.data(for: request)
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    /// A client of its own: `client_secret_basic`, or `private_key_jwt` with `jwks`; with
    /// `dpopNonce`, the token endpoint demands server nonces from it; with `tokenExchange`, it
    /// may exchange its users' access tokens (RFC 8693, actor tokens accepted).
    func makeClient(
        idTokenAlgorithm: String = "RS256", jwks: [String: Any]? = nil, dpopNonce: Bool = false,
        tokenExchange: Bool = false
    ) async throws -> (id: String, secret: String) {
        var body: [String: Any] = [
            "id_token_alg": idTokenAlgorithm, "dpop_nonce": dpopNonce, "token_exchange": tokenExchange,
        ]
        if let jwks {
            body["jwks"] = jwks
            body["auth_method"] = "private_key_jwt"
        }
        let reply = try await json("test/clients", method: "POST", body: body)
        return (try #require(reply["client_id"] as? String), try #require(reply["client_secret"] as? String))
    }
}

/// A browser with one cookie jar for a whole test, as the provider's logout needs the session
/// cookie its sign-in set.
final class CookieBrowser: BrowserOpener {
    let session = URLSession(configuration: .ephemeral)
    deinit { session.finishTasksAndInvalidate() }
    func open(_ url: URL) async throws {
        _ = try await session.data(from: url)
    }
}

/// OpenID Connect against idpyoidc 5.0.0: sign-in with the code flow and PKCE, the ID token
/// validated, UserInfo, a key rotation (one JWKS re-fetch), `private_key_jwt`, and sign-out at
/// the provider.
@Suite(.serialized, .enabled(if: IdpyoidcProvider.plain.isConfigured, IdpyoidcProvider.plain.notRunReason))
struct OpenIDConnectIdpyoidcEndToEndTests {
    let redirectURI = URL(string: "http://127.0.0.1/callback")!

    func signIn(
        _ oidc: OpenIDClient, into authenticator: OAuthAuthenticator, browser: any BrowserOpener = CookieBrowser()
    ) async throws -> OpenIDSession {
        try await oidc.signIn(
            redirectURI: redirectURI, scope: "openid profile email",
            userAgent: LoopbackUserAgent(opener: browser, timeout: 30), configuring: authenticator)
    }

    @Test(arguments: ["RS256", "ES256"])
    func signInValidatesTheIDTokenAndUserInfoAgrees(algorithm: String) async throws {
        let client = try await IdpyoidcProvider.plain.makeClient(idTokenAlgorithm: algorithm)
        let provider = try await OpenIDProvider.discover(issuer: try IdpyoidcProvider.plain.base)
        let oidc = OpenIDClient(provider: provider, client: .clientSecretBasic(id: client.id, secret: client.secret))
        let authenticator = OAuthAuthenticator(store: InMemoryTokenStore())
        let session = try await signIn(oidc, into: authenticator)
        #expect(!session.claims.subject.isEmpty)
        #expect(session.claims.audiences.contains(client.id))
        #expect(try CompactHeader.algorithm(of: session.token.idToken ?? "") == algorithm)
        let info = try await oidc.userInfo(using: authenticator)
        #expect(info["sub"] == .string(session.claims.subject), "UserInfo names the ID token's subject")
    }

    @Test func aRotatedSigningKeyIsFetchedOnceAndSignInGoesOn() async throws {
        let client = try await IdpyoidcProvider.plain.makeClient()
        let provider = try await OpenIDProvider.discover(
            issuer: try IdpyoidcProvider.plain.base, minimumKeyRefetchInterval: 1)
        let oidc = OpenIDClient(provider: provider, client: .clientSecretBasic(id: client.id, secret: client.secret))
        _ = try await signIn(oidc, into: OAuthAuthenticator(store: InMemoryTokenStore()))
        #expect(await provider.keys.fetchCount == 1)
        _ = try await IdpyoidcProvider.plain.json("test/rotate-keys", method: "POST")
        try await Task.sleep(for: .seconds(1.1))  // the client's minimum re-fetch interval here
        let session = try await signIn(oidc, into: OAuthAuthenticator(store: InMemoryTokenStore()))
        #expect(!session.claims.subject.isEmpty)
        #expect(await provider.keys.fetchCount == 2, "one re-fetch for the new kid")
    }

    @Test func privateKeyJWTWithTheTokenEndpointAsAudience() async throws {
        let key = ES256PrivateKey()
        let parameters = try #require(key.publicKey.parameters)
        let jwks: [String: Any] = [
            "keys": [
                ["kty": "EC", "crv": "P-256", "kid": "client-key", "use": "sig", "x": parameters.x, "y": parameters.y]
            ]
        ]
        let client = try await IdpyoidcProvider.plain.makeClient(jwks: jwks)
        let provider = try await OpenIDProvider.discover(issuer: try IdpyoidcProvider.plain.base)
        let oidc = OpenIDClient(
            provider: provider,
            client: .assertion(id: client.id, signer: PrivateKeyJWT(key: key, keyID: "client-key", audience: .endpoint))
        )  // idpyoidc 5 refuses the issuer
        let session = try await signIn(oidc, into: OAuthAuthenticator(store: InMemoryTokenStore()))
        #expect(session.claims.audiences.contains(client.id))
    }

    @Test func signOutEndsTheSessionAtTheProvider() async throws {
        let client = try await IdpyoidcProvider.plain.makeClient()
        let provider = try await OpenIDProvider.discover(issuer: try IdpyoidcProvider.plain.base)
        let oidc = OpenIDClient(provider: provider, client: .clientSecretBasic(id: client.id, secret: client.secret))
        let browser = CookieBrowser()
        let authenticator = OAuthAuthenticator(store: InMemoryTokenStore())
        _ = try await signIn(oidc, into: authenticator, browser: browser)
        try await oidc.signOut(
            authenticator, postLogoutRedirectURI: URL(string: "http://127.0.0.1/signed-out")!,
            userAgent: LoopbackUserAgent(opener: browser, timeout: 30))
        #expect(try await authenticator.currentCredential() == nil)
        let stats = try await IdpyoidcProvider.plain.json("test/stats/\(client.id)")
        #expect(stats["logout"] as? Int == 1, "the provider ended the session: \(stats)")
    }
}

/// Reads a JWS header's `alg` (for the test's check of the provider's choice).
enum CompactHeader {
    static func algorithm(of token: String) throws -> String? {
        guard let part = token.split(separator: ".").first else { return nil }
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        let header = try JSONSerialization.jsonObject(with: Data(base64Encoded: base64) ?? Data()) as? [String: Any]
        return header?["alg"] as? String
    }
}

/// Guards against a silent skip: in CI (`CI` set) the OpenID provider must be there.
@Test func idpyoidcTestsHaveAProviderInCI() {
    if ProcessInfo.processInfo.environment["CI"] != nil {
        #expect(IdpyoidcProvider.plain.isConfigured, "CI must run the idpyoidc tests: use Scripts/test")
        #expect(IdpyoidcProvider.dpop.isConfigured, "CI must run the idpyoidc DPoP tests: use Scripts/test")
    }
}
