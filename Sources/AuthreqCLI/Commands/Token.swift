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

    @Flag(
        help: """
            Print one JSON object: access_token, token_type, expires_at and expires_in (when the server \
            gave an expiry), scope. Never the refresh token.
            """)
    var json = false

    func run() async throws {
        try await global.reporting {
            // Refused before anything is read or fetched.
            if json && header { throw CLIError.usage("Choose one of --json and --header.") }
            let session = try global.session()
            let authenticator = try await session.requireSession()
            let token = try await authenticator.validCredential()
            if json {
                session.console.output(try Self.json(of: token, now: Date()))
            } else if header {
                guard token.isBearer, token.isAccessToken else {
                    throw CLIError.usage(
                        "The token is a '\(token.tokenType)' token, which needs more than a header; use authreq fetch.")
                }
                session.console.output(line: "Authorization: Bearer \(token.accessToken)")
            } else {
                session.console.output(line: token.accessToken)
            }
        }
    }

    /// The `--json` object of `token`: what a script needs to use it and to know when it ends.
    static func json(of token: OAuthToken, now: Date) throws -> Data {
        var fields: [String: JSONValue] = [
            "access_token": .string(token.accessToken),
            "token_type": .string(token.tokenType),
            "scope": token.scope.map(JSONValue.string) ?? .null,
        ]
        if let expiresAt = token.expiresAt {
            fields["expires_at"] = .string(ISO8601DateFormatter().string(from: expiresAt))
            fields["expires_in"] = .number(expiresAt.timeIntervalSince(now).rounded())
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(JSONValue.object(fields)) + Data("\n".utf8)
    }
}
