import AuthenticatedRequests
import Foundation
import OAuthFlows
import OpenIDConnect

/// An assistant that signs Ada in through CIBA as an OpenID Connect session: the ID token is
/// validated, the session is stored, and every process sharing the store waits for her one
/// approval; a resource that asks for more (a payment she has not approved) asks her again.
func assistantSession(issuer: URL, secret: String, store: any TokenStore) async throws -> OAuthAuthenticator {
    let provider = try await OpenIDProvider.discover(issuer: issuer)
    let oidc = OpenIDClient(provider: provider, client: .clientSecretBasic(id: "assistant", secret: secret))
    if let restored = try await oidc.restore(store: store) { return restored }  // signed in before
    let flow = try oidc.backchannelSessionFlow(
        request: BackchannelAuthenticationRequest(
            hint: .loginHint("ada@example.com"), scope: "openid calendar offline_access",
            bindingMessage: "Let the assistant read your calendar"),
        allowsStepUp: true)
    return OAuthAuthenticator(flow: flow, store: store)
}
