import Foundation

/// How an ``OAuthAuthenticator`` gets and refreshes tokens: one OAuth 2.0 grant, configured
/// with its token endpoint and client.
///
/// The `OAuthFlows` module provides the grants of RFC 6749 and its extensions
/// (`ClientCredentialsFlow`, `AuthorizationCodeFlow`, `RefreshTokenFlow`, device authorization,
/// and a generic grant). Conform your own type for anything else.
public protocol OAuthFlow: Sendable {
    /// The token store entry for this flow's tokens; it must differ between clients and servers
    /// (e.g. token endpoint and client id).
    var storeKey: String { get }

    /// Obtains a first token, when there is none (e.g. runs the client credentials grant).
    /// Throw ``AuthenticationError`` with code ``AuthenticationError/Code/missingCredential``
    /// when the flow cannot obtain one without the user.
    func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken

    /// Returns a fresh token in place of `token` (e.g. with the refresh token grant).
    func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken
}
