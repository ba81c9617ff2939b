import AuthenticatedRequests
import Foundation

/// A claims provider the application trusts for aggregated and distributed claims (OpenID
/// Connect Core §5.6.2), with the keys its claims are verified with.
///
/// Claims held elsewhere are signed by whoever holds them, and a JWT can name any issuer: the
/// client verifies one only with keys the application named for it. Without any, only the OpenID
/// provider itself is trusted, for claims JWTs whose `iss` is its issuer.
///
/// ```swift
/// var oidc = OpenIDClient(provider: provider, client: .none(id: "my-app"))
/// oidc.claimsProviders = [
///     .issuer("https://credit.example.com", keys: .jwks(URL(string: "https://credit.example.com/jwks")!)),
///     // The suite's distributed claims: signed with the provider's keys, no `iss`.
///     .endpoint(URL(string: "https://op.example.com/claims_endpoint")!, keys: .openIDProvider),
/// ]
/// ```
public struct ClaimsProvider: Sendable, CustomStringConvertible {
    /// Where the keys of a claims provider come from.
    public enum Keys: Sendable {
        /// The OpenID provider's own keys (its `jwks_uri`).
        case openIDProvider
        /// The JSON Web Key Set at this URL (https, or http to a loopback address).
        case jwks(URL)
    }

    enum Match: Sendable {
        case issuer(String)
        case endpoint(ResourceBoundary)
    }

    let match: Match
    /// Where its keys come from.
    public let keys: Keys
    /// The signature algorithms accepted from it (never `none` or an HMAC).
    public let algorithms: [String]

    /// A provider whose claims JWTs carry `iss` equal to `issuer`, compared exactly.
    public static func issuer(
        _ issuer: String, keys: Keys, algorithms: [String] = ["RS256", "PS256", "ES256"]
    ) -> ClaimsProvider {
        ClaimsProvider(match: .issuer(issuer), keys: keys, algorithms: algorithms)
    }

    /// The provider behind a distributed source's `endpoint` (this URL or below it, compared as
    /// `ResourceBoundary` compares): its JWT is verified with `keys` whether or not it names an
    /// issuer. Core §5.6.2 does not require `iss` in a claims JWT, and the OpenID Foundation's
    /// suite signs `{"credit_score": 650}` alone.
    public static func endpoint(
        _ endpoint: URL, keys: Keys, algorithms: [String] = ["RS256", "PS256", "ES256"]
    ) -> ClaimsProvider {
        ClaimsProvider(match: .endpoint(ResourceBoundary(endpoint)), keys: keys, algorithms: algorithms)
    }

    /// Whether this provider is the one for a claims JWT whose `iss` is `issuer`, read at
    /// `endpoint` (`nil` for an aggregated source).
    func matches(issuer: String?, endpoint: URL?) -> Bool {
        switch match {
        case .issuer(let trusted): issuer == trusted
        case .endpoint(let boundary): endpoint.map(boundary.contains) ?? false
        }
    }

    /// The issuer or endpoint, for messages.
    public var description: String {
        switch match {
        case .issuer(let issuer): "ClaimsProvider(issuer: \(issuer))"
        case .endpoint(let boundary): "ClaimsProvider(endpoint: \(boundary))"
        }
    }
}
