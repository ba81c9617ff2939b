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

    /// For a flow whose first token asks a person (CIBA, the device grant): how long another
    /// process sharing the store waits for the token this one is obtaining, so that the person is
    /// asked once for every process (``Authenticator/initialCredentialLockTimeout``). `nil` by
    /// default: each process obtains its own.
    var initialTokenLockTimeout: TimeInterval? { get }

    /// Returns a fresh token in place of `token` (e.g. with the refresh token grant).
    func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken

    /// Whether ``stepUp(_:to:for:)`` can obtain more than `token` has. When `true`, a `401` or
    /// `403` whose challenge asks for a step-up (``StepUpRequirement``) is handled as a rejected
    /// credential: one step-up, shared by every request that hit it, then one retry. The default
    /// is `false`: such a response reaches the caller as it is.
    var canStepUp: Bool { get }

    /// The URLs this flow's tokens may be sent to, for a flow that obtains tokens for one
    /// protected resource (RFC 8707): the authenticator refuses every other URL with
    /// ``AuthenticationError/Code/foreignResource`` before anything is sent. `nil` by default:
    /// the authenticator's user decides where its tokens go.
    var resourceBoundary: ResourceBoundary? { get }

    /// Returns a token that meets `requirement`, in place of `token`: a new authorization with
    /// the union of the granted and required scopes, or a sign-in with the `acr_values` and
    /// `max_age` asked for. Throw ``StepUpError`` when the user must take part and cannot.
    func stepUp(_ token: OAuthToken, to requirement: StepUpRequirement, for context: AuthenticationContext)
        async throws -> OAuthToken
}

extension OAuthFlow {
    /// `nil`: each process obtains its own first token.
    public var initialTokenLockTimeout: TimeInterval? { nil }

    /// `false`.
    public var canStepUp: Bool { false }

    /// `nil`: no boundary.
    public var resourceBoundary: ResourceBoundary? { nil }

    /// Throws ``StepUpError`` with ``StepUpError/Code/unsupported``.
    public func stepUp(_ token: OAuthToken, to requirement: StepUpRequirement, for context: AuthenticationContext)
        async throws -> OAuthToken
    {
        throw StepUpError(.unsupported, requirement: requirement)
    }
}
