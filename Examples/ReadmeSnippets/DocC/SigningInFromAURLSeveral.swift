import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import ResourceDiscovery

/// One sign-in for three resources of one authorization server; each token goes to its own
/// resource only.
func organizerNotes(notesURL: URL, calendarURL: URL, filesURL: URL, tokensFolder: URL) async throws
    -> [NotesIndex.Note]
{
    let grant = try await ResourceGrant.discover(
        resources: [notesURL, calendarURL, filesURL],
        registration: .dynamic(clientName: "Organizer"),
        method: .browser(LoopbackUserAgent()),
        store: FileTokenStore(directory: tokensFolder))
    return try await NotesIndex(authenticator: try grant.authenticator(for: notesURL), url: notesURL)
        .request()
}
