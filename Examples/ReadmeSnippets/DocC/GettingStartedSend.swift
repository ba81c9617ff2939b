import AuthenticatedRequests
import Foundation
import OAuthFlows

/// The authenticator of the app: tokens from the client credentials grant, kept in `.tokens`.
func favoritesAuthenticator(secret: String) async -> OAuthAuthenticator {
    let authenticator = OAuthAuthenticator(
        store: FileTokenStore(directory: URL(fileURLWithPath: ".tokens")))
    await authenticator.configure(
        with: ClientCredentialsFlow(
            tokenEndpoint: URL(string: "https://auth.example.com/token")!,
            client: .clientSecretBasic(id: "my-app", secret: secret),
            scope: "favorites:read"))
    return authenticator
}

/// The favorites of `userID`: the first request obtains a token, later ones reuse it.
func favorites(of userID: String, secret: String) async throws -> [String] {
    let authenticator = await favoritesAuthenticator(secret: secret)
    return try await Favorites(authenticator: authenticator).request(using: userID).items
}
