import AuthenticatedRequests
import Foundation

/// The UserInfo claims of the signed-in user (OpenID Connect Core §5.3), with the claims of their
/// aggregated and distributed sources (§5.6.2) in place, and the sources that could not be used.
///
/// One claim source that fails (unreachable, unsigned, signed by a provider the application does
/// not trust, expired) costs only its own claims: they stay pointers in `_claim_names`, and the
/// failure is in ``failedClaimSources``.
public struct UserInfo: Sendable, CustomStringConvertible {
    /// The claims: UserInfo's own and those of every source that was read and trusted.
    public let claims: [String: JSONValue]
    /// The claim sources that could not be read or trusted, each with its error.
    public let failedClaimSources: [ClaimSourceFailure]

    /// The claim `name`, e.g. `info["email"]`.
    public subscript(name: String) -> JSONValue? { claims[name] }

    /// The subject (`sub`): the ID token's.
    public var subject: String? { claims["sub"]?.stringValue }

    /// The claim names, and the failed sources by name; no claim value.
    public var description: String {
        "UserInfo(claims: \(claims.keys.sorted())"
            + (failedClaimSources.isEmpty ? "" : ", failed sources: \(failedClaimSources.map(\.source))") + ")"
    }
}

/// A claim source of UserInfo (Core §5.6.2) that could not be read or trusted: its claims were
/// not used.
public struct ClaimSourceFailure: Sendable, CustomStringConvertible {
    /// The source's name in `_claim_sources`.
    public let source: String
    /// The claims `_claim_names` maps to it.
    public let claims: [String]
    /// Why: ``OpenIDConnectError`` ``OpenIDConnectError/Code/claimSourceFailed``.
    public let error: OpenIDConnectError

    /// The source, its claims and the error's message.
    public var description: String { "\(source) (\(claims.joined(separator: ", "))): \(error.message)" }
}
