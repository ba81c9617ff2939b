import AuthenticatedRequests
import Foundation
import OAuthFlows

/// A job in Kubernetes: its projected service-account token (`tokenFile`, such as
/// `/var/run/secrets/tokens/reports`) is the grant, read again for every grant because the
/// platform rotates it. No secret is deployed, and no client authentication is sent: the token
/// names the workload.
func workloadAuthenticator(tokenEndpoint: URL, tokenFile: URL, resource: URL) -> OAuthAuthenticator {
    let flow = JWTBearerFlow(
        tokenEndpoint: tokenEndpoint,
        client: .unidentified,  // no client_id: the workload's token is the only credential
        assertion: .file(tokenFile),
        scope: "reports:read",
        resources: [resource])
    return OAuthAuthenticator(flow: flow)
}
