import AuthenticatedRequests
import DPoP

/// An authenticator whose tokens are bound to a key of its own: every request carries a proof.
func boundAuthenticator(flow: any OAuthFlow, store: any TokenStore) -> OAuthAuthenticator {
    OAuthAuthenticator(
        flow: flow, store: store,
        configuration: .init(proofOfPossession: DPoPProver()))
}
