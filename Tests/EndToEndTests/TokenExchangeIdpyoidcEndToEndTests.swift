import AuthenticatedRequests
import CodeFlowOAuth
import Crypto
import Foundation
import OAuthFlows
import OpenIDConnect
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 8693 against idpyoidc 5.0.0's token exchange (`TokenExchangeHelper`): a signed-in user's
/// access token exchanged for one with an audience, the user's new token presented after their
/// session refreshed, delegation with an actor token, and `invalid_target` for a resource the
/// provider's policy does not know. The provider records a fingerprint of every subject and
/// actor token it was sent. idpyoidc's own policy refuses every actor token; the test provider's
/// policy (`delegation_policy` in `Tests/OpenIDProvider/server.py`) accepts one that is an access
/// token it issued, then applies idpyoidc's.
@Suite(.enabled(if: IdpyoidcProvider.plain.isConfigured, IdpyoidcProvider.plain.notRunReason))
struct TokenExchangeIdpyoidcEndToEndTests {
    struct SignedIn {
        let oidc: OpenIDClient
        let clientID: String
        let client: ClientAuthentication
        let user: OAuthAuthenticator
        let tokenEndpoint: URL
    }

    let context = AuthenticationContext(transport: URLSessionTransport(), allowsInsecureHTTP: true)

    /// A client allowed to exchange tokens, and a user signed in through it.
    func signedIn() async throws -> SignedIn {
        let made = try await IdpyoidcProvider.plain.makeClient(tokenExchange: true)
        let provider = try await OpenIDProvider.discover(issuer: try IdpyoidcProvider.plain.base)
        let client = ClientAuthentication.clientSecretBasic(id: made.id, secret: made.secret)
        let oidc = OpenIDClient(provider: provider, client: client)
        let user = OAuthAuthenticator(store: InMemoryTokenStore())
        // idpyoidc issues a refresh token for offline_access, which OpenID Connect pairs with consent.
        _ = try await oidc.signIn(
            redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "openid profile email offline_access",
            request: OpenIDAuthenticationRequest(prompt: "consent"),
            userAgent: LoopbackUserAgent(opener: CookieBrowser(), timeout: 30), configuring: user)
        return SignedIn(
            oidc: oidc, clientID: made.id, client: client, user: user,
            tokenEndpoint: try #require(provider.metadata.tokenEndpoint))
    }

    static func fingerprint(_ token: String) -> String {
        String(SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined().prefix(16))
    }

    func stats(_ clientID: String) async throws -> [String: Int] {
        try await IdpyoidcProvider.plain.json("test/stats/\(clientID)").compactMapValues { $0 as? Int }
    }

    @Test func aUsersTokenIsExchangedForAnAudienceAndTheirNewTokenAfterTheirSessionRefreshed() async throws {
        let party = try await signedIn()
        let flow = TokenExchangeFlow(
            tokenEndpoint: party.tokenEndpoint, client: party.client, subject: .accessToken(of: party.user),
            requestedTokenType: .accessToken, audiences: ["https://calendar.example.com"])
        let userToken = try #require(try await party.user.currentCredential())
        let first = try await flow.obtainToken(for: context)
        #expect(!first.accessToken.isEmpty && first.accessToken != userToken.accessToken)

        // The user's session refreshes (as the engine would at expiry): the next exchange
        // presents the user's new token, not the one the first exchange was made from.
        let refreshed = try await party.oidc.sessionFlow().refresh(userToken, for: context)
        await party.user.setCredential(refreshed)
        #expect(refreshed.accessToken != userToken.accessToken)
        let second = try await flow.obtainToken(for: context)
        #expect(second.accessToken != first.accessToken)
        let counts = try await stats(party.clientID)
        #expect(counts["subject:" + Self.fingerprint(userToken.accessToken)] == 1, "\(counts)")
        #expect(counts["subject:" + Self.fingerprint(refreshed.accessToken)] == 1, "\(counts)")
    }

    @Test func delegationSendsTheActorsTokenAndAnUnknownResourceIsInvalidTarget() async throws {
        let party = try await signedIn()
        let agent = try await signedIn()  // the actor: another client's signed-in session
        let delegation = TokenExchangeFlow(
            tokenEndpoint: party.tokenEndpoint, client: party.client, subject: .accessToken(of: party.user),
            actor: .accessToken(of: agent.user), requestedTokenType: .accessToken)
        let delegated = try await delegation.obtainToken(for: context)
        #expect(!delegated.accessToken.isEmpty)
        let actorToken = try #require(try await agent.user.currentCredential()).accessToken
        #expect(try await stats(party.clientID)["actor:" + Self.fingerprint(actorToken)] == 1)

        let elsewhere = TokenExchangeFlow(
            tokenEndpoint: party.tokenEndpoint, client: party.client, subject: .accessToken(of: party.user),
            requestedTokenType: .accessToken, resources: [URL(string: "https://unknown.example.com/api")!])
        let error = await #expect(throws: OAuthError.self) { try await elsewhere.obtainToken(for: context) }
        #expect(error?.code == .invalidTarget, "\(String(describing: error))")
    }
}
