import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

#if canImport(FoundationNetworking)
import FoundationNetworking  // URLRequest lives here on Linux
#endif

/// One endpoint of your API that needs the user's token.
struct CurrentUser: AuthenticatedResource {
    struct Output: Decodable { let name: String }
    let authenticator: any RequestAuthenticator

    func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(url: URL(string: "https://api.example.com/me")!)
    }
}

/// Signs the user in once; every later launch restores the session, without a network too.
func signedIn(tokens: URL) async throws -> OAuthAuthenticator {
    let store = FileTokenStore(directory: tokens)  // or KeychainTokenStore(service:) on Apple platforms
    let client = ClientAuthentication.none(id: "my-app")
    let metadata = try await AuthorizationServerMetadata.discover(
        issuer: URL(string: "https://auth.example.com")!, cachingIn: store)  // kept with the session

    if let session = try await OAuthAuthenticator.restore(metadata: metadata, client: client, store: store),
        await session.canRenew()
    {
        return session  // signed in before: no browser
    }
    let authenticator = OAuthAuthenticator(store: store)
    let signIn = CodeFlowManager(  // PKCE; the system browser, or the web authentication sheet on iOS
        configuration: try AuthenticationConfiguration(
            metadata: metadata, client: client,
            redirectURI: URL(string: "http://127.0.0.1/callback")!,  // iOS: "com.example.app:/oauth"
            scope: "profile"))
    try await signIn.signIn(configuring: authenticator)
    return authenticator
}

func greet(tokens: URL) async throws -> String {
    let me = try await CurrentUser(authenticator: try await signedIn(tokens: tokens)).request()
    return "Hello, \(me.name)"  // refreshed ahead of expiry, retried once after a 401
}
