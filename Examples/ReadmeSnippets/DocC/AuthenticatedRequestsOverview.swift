import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct Profile: AuthenticatedResource {
    struct Output: Decodable { let name: String }
    let authenticator: any RequestAuthenticator

    func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(url: URL(string: "https://api.example.com/me")!)
    }
}

func myName(using authenticator: OAuthAuthenticator) async throws -> String {
    try await Profile(authenticator: authenticator).request().name
}
