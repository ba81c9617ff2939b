import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import ResourceDiscovery

#if canImport(FoundationNetworking)
import FoundationNetworking  // URLRequest lives here on Linux
#endif

/// An endpoint of the notes service, the app's own.
struct NotesIndex: AuthenticatedResource {
    struct Note: Decodable { let title: String }
    typealias Output = [Note]
    let authenticator: any RequestAuthenticator
    let url: URL
    func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
}

/// Signs in to the notes service from its URL alone, then reads the notes.
func notes(at notesURL: URL, tokensFolder: URL) async throws -> [NotesIndex.Note] {
    let signIn = ResourceSignIn(
        resource: notesURL,
        registration: .dynamic(clientName: "Notes Agent"),
        method: .browser(LoopbackUserAgent()),
        store: FileTokenStore(directory: tokensFolder))
    let authenticator = try await signIn.authenticator()
    return try await NotesIndex(authenticator: authenticator, url: notesURL).request()
}
