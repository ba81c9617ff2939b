import ArgumentParser
import AuthenticatedRequests
import Foundation

/// `authreq token`: a valid access token on standard output.
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a valid access token, refreshed first if it expired.",
        discussion: """
            Nothing else goes to standard output, so it can be used as: \
            curl -H "$(authreq token --header)" https://api.example.com/me
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print an HTTP header line, 'Authorization: Bearer <token>'.")
    var header = false

    func run() async throws {
        try await global.reporting {
            let session = try global.session()
            let authenticator = try await session.requireSession()
            let token = try await authenticator.validCredential()
            if header {
                guard token.isBearer else {
                    throw CLIError.usage(
                        "The token is a '\(token.tokenType)' token, which needs more than a header; use authreq fetch.")
                }
                session.console.output(line: "Authorization: Bearer \(token.accessToken)")
            } else {
                session.console.output(line: token.accessToken)
            }
        }
    }
}
