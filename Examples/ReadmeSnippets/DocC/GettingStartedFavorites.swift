import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking  // URLRequest lives here on Linux
#endif

struct Favorites: AuthenticatedResource {
    typealias Input = String  // the user's id
    struct Output: Decodable { let items: [String] }
    let authenticator: any RequestAuthenticator
    var httpMethod: RequestMethod { .get }

    func urlRequest(using userID: String) throws -> URLRequest {
        URLRequest(url: URL(string: "https://api.example.com/users/\(userID)/favorites")!)
    }
}
