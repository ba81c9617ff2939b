import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

/// Issue 11, item 4: `print`, `String(reflecting:)`, `dump` and `Mirror` of every type that holds
/// a secret show it redacted.
@Suite struct SecretReflectionTests {
    static let secrets = [
        "AT-secret-access", "RT-secret-refresh", "CODE-secret-xyz", "CS-secret-client", "DEV-secret-code",
    ]

    func assertNoSecret(_ value: Any, extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) {
        var dumped = ""
        dump(value, to: &dumped)
        var mirrored = ""
        for child in Mirror(reflecting: value).children { mirrored += "\(child.label ?? ""): \(child.value)\n" }
        for text in [String(describing: value), String(reflecting: value), dumped, mirrored] {
            for secret in Self.secrets + extra {
                #expect(!text.contains(secret), "\(secret) leaked in: \(text)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func theCodeFlowsValuesAreRedacted() throws {
        let configuration = AuthenticationConfiguration(
            authorizationEndpoint: URL(string: "https://auth.example.com/authorize")!,
            tokenEndpoint: tokenURL,
            client: .clientSecretBasic(id: "app", secret: "CS-secret-client"),
            redirectURI: URL(string: "http://127.0.0.1:4000/callback")!
        )
        let request = try AuthorizationRequest(configuration: configuration, redirectURI: configuration.redirectURI)
        let verifier = try #require(request.pkce?.verifier)
        assertNoSecret(request, extra: [request.state, verifier])
        assertNoSecret(configuration)
        let redirect = URL(
            string:
                "http://127.0.0.1:4000/callback?code=CODE-secret-xyz&state=\(request.state)&session_state=S-secret-1")!
        let response = try AuthorizationResponse(
            redirect: redirect, request: request, issuer: nil, requiresIssuer: false)
        assertNoSecret(response, extra: [request.state, "S-secret-1"])
        let flow = AuthorizationCodeFlow(
            tokenEndpoint: tokenURL, client: configuration.client, code: "CODE-secret-xyz",
            redirectURI: redirect.absoluteString, codeVerifier: verifier)
        assertNoSecret(flow, extra: [verifier])
        let token = OAuthToken(
            accessToken: "AT-secret-access", refreshToken: "RT-secret-refresh", idToken: "ID-secret",
            additionalFields: ["x": .string("X-secret")])
        assertNoSecret(CodeFlowResult(token: token, flow: flow), extra: [verifier, "ID-secret", "X-secret"])
        assertNoSecret(try PKCE(verifier: verifier), extra: [verifier])
    }

    @Test func theFlowsAndEndpointsAreRedacted() {
        let client = ClientAuthentication.clientSecretPost(id: "app", secret: "CS-secret-client")
        assertNoSecret(client)
        assertNoSecret(TokenEndpoint(url: tokenURL, client: client))
        assertNoSecret(RevocationEndpoint(url: tokenURL, client: client))
        assertNoSecret(ClientCredentialsFlow(tokenEndpoint: tokenURL, client: client))
        assertNoSecret(RefreshTokenFlow(tokenEndpoint: tokenURL, client: client, refreshToken: "RT-secret-refresh"))
        assertNoSecret(
            ExtensionGrantFlow(
                tokenEndpoint: tokenURL, client: client, grantType: "urn:ietf:params:oauth:grant-type:token-exchange",
                parameters: ["subject_token": "AT-secret-access"]))
        assertNoSecret(
            DeviceAuthorization(
                deviceCode: "DEV-secret-code", userCode: "ABCD", verificationURI: tokenURL,
                verificationURIComplete: nil, expiresAt: Date(timeIntervalSince1970: .nan), interval: .infinity))
        assertNoSecret(BearerTokenAuthenticator(flow: ClientCredentialsFlow(tokenEndpoint: tokenURL, client: client)))
    }

    @Test func anAuthenticatorHoldingATokenDumpsNoSecret() async throws {
        let client = ClientAuthentication.clientSecretBasic(id: "app", secret: "CS-secret-client")
        let authenticator = OAuthAuthenticator(
            flow: RefreshTokenFlow(tokenEndpoint: tokenURL, client: client, refreshToken: "RT-secret-refresh"),
            token: OAuthToken(accessToken: "AT-secret-access", refreshToken: "RT-secret-refresh")
        )
        _ = try await authenticator.currentCredential()
        assertNoSecret(authenticator)
    }
}
