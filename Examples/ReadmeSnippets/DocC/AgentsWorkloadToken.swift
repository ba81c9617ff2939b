import AuthenticatedRequests
import Foundation
import OAuthFlows

/// A job in Kubernetes: its projected service-account token is the grant, read again for every
/// grant because the platform rotates it; no secret is deployed.
func workloadAuthenticator(tokenEndpoint: URL) -> OAuthAuthenticator {
    let flow = JWTBearerFlow(
        tokenEndpoint: tokenEndpoint,
        client: .none(id: "reports-job"),
        assertion: .file(URL(fileURLWithPath: "/var/run/secrets/tokens/reports")),
        scope: "reports:read",
        resources: [URL(string: "https://reports.example.com")!])
    return OAuthAuthenticator(flow: flow)
}
