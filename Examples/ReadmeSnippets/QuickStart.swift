// The README's "Quick start" and "Browser sign-in" snippets, compiled by every build.
import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

#if canImport(FoundationNetworking)
    import FoundationNetworking  // URLRequest lives here on Linux
#endif

struct Me: AuthenticatedResource {  // one endpoint that needs a token
    struct Output: Decodable { let name: String }
    let authenticator: any RequestAuthenticator

    func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(url: URL(string: "https://api.example.com/me")!)
    }
}

/// README: "Quick start".
func quickStart(secret: String) async throws -> String {
    let authenticator = OAuthAuthenticator(  // the actor that owns the token
        store: FileTokenStore(directory: URL(fileURLWithPath: ".tokens")))
    await authenticator.configure(
        with: ClientCredentialsFlow(  // the grant that gets tokens
            tokenEndpoint: URL(string: "https://auth.example.com/token")!,
            client: .clientSecretBasic(id: "my-app", secret: secret),
            scope: "profile"))

    let me = try await Me(authenticator: authenticator).request()
    return "Hello, \(me.name)"
}
