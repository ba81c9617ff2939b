import AuthenticatedRequests
import Foundation
import OAuthFlows

/// Configures `authenticator` with the client credentials grant at the server `issuer` names.
func configureReporting(_ authenticator: OAuthAuthenticator, issuer: URL, secret: String) async throws {
    let metadata = try await AuthorizationServerMetadata.discover(issuer: issuer)
    await authenticator.configure(
        with: try metadata.clientCredentialsFlow(
            client: .clientSecretBasic(id: "reporting", secret: secret),
            scope: "reports:read"))
}
