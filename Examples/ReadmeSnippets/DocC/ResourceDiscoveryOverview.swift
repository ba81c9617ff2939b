import AuthenticatedRequests
import Foundation
import OAuthFlows
import ResourceDiscovery

/// The authorization server of the resource whose `401` (in `error`) named its metadata.
func authorizationServer(after error: any Error, context: AuthenticationContext) async throws
    -> AuthorizationServerMetadata?
{
    let challenges = (error as? ResourceError)?.challenges ?? []
    let resource = try await ProtectedResourceMetadata.discover(
        for: URL(string: "https://api.example.com/mcp")!, challenges: challenges, context: context)
    guard let issuer = resource.authorizationServers.first else { return nil }
    return try await AuthorizationServerMetadata.discover(anyDocumentOf: issuer, context: context)
}
