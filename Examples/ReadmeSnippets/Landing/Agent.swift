import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import ResourceDiscovery

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct Notes: AuthenticatedResource {
    typealias Output = Data
    let authenticator: any RequestAuthenticator
    let url: URL

    func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
}

/// Nothing configured but the URL: discovery, registration (once per issuer), sign-in.
func readNotes(at url: URL, tokens: URL) async throws -> Data {
    let signIn = ResourceSignIn(
        resource: url,
        registration: .dynamic(clientName: "Notes Agent"),
        method: .browser(LoopbackUserAgent()),
        store: FileTokenStore(directory: tokens))
    let authenticator = try await signIn.authenticator()
    return try await Notes(authenticator: authenticator, url: url).request()  // steps up when asked
}
