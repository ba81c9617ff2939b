import ArgumentParser
import AuthenticatedRequests
import Foundation

/// `authreq status`: what the profile is signed in to, never a secret.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the profile, its server and client, and the session's expiry; no secrets.",
        discussion: """
            Exit status 0 when signed in, 3 when not. Works offline: nothing is sent to any server (no \
            discovery, no refresh); the endpoints come from the profile or from what login cached.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        try await global.reporting {
            let session = try global.session()
            let token = try await session.restore(readOnly: true)?.currentCredential()
            // A resource profile's server and client are what its sign-in discovered and registered.
            let discovered = try await session.profile.resource.asyncMap { resource in
                try await session.resourceFlow(resource, readOnly: true)
            }
            let report = StatusReport(
                session: session, token: token, now: Date(),
                discovered: discovered.flatMap { $0 }.map { ($0.issuer, $0.endpoint.client.clientID) })
            session.console.output(json ? try report.json() : Data(report.text.utf8))
            if token == nil { throw ExitCode(ExitStatus.needsSignIn) }
        }
    }
}

/// The facts `status` shows.
struct StatusReport {
    let session: ProfileSession
    let token: OAuthToken?
    let now: Date
    /// For a resource profile: the issuer its sign-in discovered and the client id it registered
    /// there (from what `login` cached; `nil` before the first login).
    var discovered: (issuer: String, clientID: String)? = nil

    /// The issuer: the profile's, else the discovered one.
    private var issuer: String? { session.profile.issuer?.absoluteString ?? discovered?.issuer }
    /// The client id: the profile's, else the registered one.
    private var clientID: String? {
        session.profile.clientID.isEmpty ? discovered?.clientID : session.profile.clientID
    }

    private var fields: [(String, JSONValue)] {
        let profile = session.profile
        var fields: [(String, JSONValue)] = [
            ("profile", .string(session.name)),
            ("issuer", issuer.map(JSONValue.string) ?? .null),
            ("client_id", clientID.map(JSONValue.string) ?? .null),
            ("resource", profile.resource.map { .string($0.absoluteString) } ?? .null),
            ("scope", (token?.scope ?? profile.scope).map(JSONValue.string) ?? .null),
            ("grant", .string(Self.grantName(of: profile))),
            ("signed_in", .bool(token != nil)),
        ]
        if let token {
            fields.append(("token_type", .string(token.tokenType)))
            if let expiresAt = token.expiresAt {
                fields.append(("expires_at", .string(ISO8601DateFormatter().string(from: expiresAt))))
                fields.append(("expires_in", .number(expiresAt.timeIntervalSince(now).rounded())))
            }
            fields.append(("has_refresh_token", .bool(token.refreshToken != nil)))
        }
        return fields
    }

    func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(JSONValue.object(Dictionary(uniqueKeysWithValues: fields))) + Data("\n".utf8)
    }

    var text: String {
        let profile = session.profile
        var lines = [
            "Profile:        \(session.name)",
            "Issuer:         \(issuer ?? profile.tokenEndpoint?.absoluteString ?? "-")",
            "Resource:       \(profile.resource?.absoluteString ?? "-")",
            "Client:         \(clientID ?? "registered at sign-in")",
            "Scope:          \(token?.scope ?? profile.scope ?? "-")",
            "Grant:          \(Self.grantName(of: profile))",
        ]
        guard let token else {
            lines.append("Signed in:      no (run: authreq login --profile \(session.name))")
            return lines.joined(separator: "\n") + "\n"
        }
        lines.append("Signed in:      yes")
        if let expiresAt = token.expiresAt {
            let left = expiresAt.timeIntervalSince(now)
            let when = ISO8601DateFormatter().string(from: expiresAt)
            lines.append(
                left > 0
                    ? "Access token:   expires in \(Duration.spoken(left)) (\(when))"
                    : "Access token:   expired \(Duration.spoken(-left)) ago (\(when)); refreshed on next use")
        } else {
            lines.append("Access token:   no expiry given")
        }
        lines.append("Refresh token:  \(token.refreshToken == nil ? "no" : "yes")")
        return lines.joined(separator: "\n") + "\n"
    }

    /// How the profile signs in, as `status` names it: `enterprise_managed` for a profile that
    /// signs in with the enterprise chain (an ID-JAG from its `--enterprise-profile`), whatever
    /// grant was recorded; otherwise the recorded grant, `authorization_code` before any login.
    static func grantName(of profile: Profile) -> String {
        if profile.enterpriseProfile != nil { return "enterprise_managed" }
        return (profile.grant ?? .authorizationCode).rawValue
    }
}

extension Optional {
    /// `transform` of the wrapped value, awaited; `nil` stays `nil`.
    func asyncMap<Mapped>(_ transform: (Wrapped) async throws -> Mapped) async rethrows -> Mapped? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
