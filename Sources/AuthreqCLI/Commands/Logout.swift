import ArgumentParser
import AuthenticatedRequests
import Foundation
import OAuthFlows
import ResourceDiscovery

/// `authreq logout`: revokes the tokens where the server can, and deletes them.
struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Revoke the tokens (RFC 7009, when the server has the endpoint) and delete them.",
        discussion: "The tokens are deleted even when revocation fails; the exit status is then 4."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await global.reporting {
            let session = try global.session()
            guard let authenticator = try await session.restore(readOnly: true),
                try await authenticator.currentCredential() != nil
            else {
                session.console.message("Profile '\(session.name)' was not signed in.")
                return
            }
            let revocation: URL?
            let client: ClientAuthentication?
            if let resource = session.profile.resource {
                let flow = try await session.resourceFlow(resource, readOnly: true)
                revocation = flow?.serverMetadata.revocationEndpoint
                client = flow?.endpoint.client
            } else {
                let endpoints = try await session.endpoints()
                revocation = endpoints.revocation
                client = try? session.client()
            }
            guard let revocation, let client else {
                await authenticator.clearCredential()
                session.console.message(
                    revocation == nil
                        ? "Signed out; the server has no revocation endpoint, so the tokens were deleted here only."
                        : "Signed out; without the client secret the tokens could not be revoked, only deleted here.")
                return
            }
            do {
                try await authenticator.signOut(revokingAt: RevocationEndpoint(url: revocation, client: client))
            } catch {
                throw CLIError(
                    ExitStatus.serverError,
                    "Signed out here, but the server did not confirm the revocation: \(ErrorReport.message(for: error))"
                )
            }
            session.console.message("Signed out: the tokens were revoked and deleted.")
        }
    }
}
