import AuthenticatedRequests
import Foundation

/// A security token to present in a grant (RFC 8693's `subject_token` and `actor_token`): its
/// value, a secret never shown, and its type.
public struct SecurityToken: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The token itself.
    public let value: String
    /// Its type.
    public let type: TokenTypeURI

    /// Creates a token.
    public init(_ value: String, type: TokenTypeURI) {
        self.value = value
        self.type = type
    }

    /// `SecurityToken(<type>, <redacted>(n chars))`.
    public var description: String { "SecurityToken(\(type), \(Redaction.describe(value)))" }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror without the value.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// Where a grant gets the security token it presents, asked anew for every token request, so
/// that nothing stale is frozen into a flow (golang/oauth2's `TokenSource`, for the tokens a
/// client presents rather than the ones it receives).
///
/// ```swift
/// // Delegation: the exchange presents the user's current access token, refreshed as needed.
/// let subject = SecurityTokenSource.accessToken(of: userAuthenticator)
/// ```
public struct SecurityTokenSource: Sendable, CustomStringConvertible {
    /// What the source is, for messages; never a token.
    public let name: String
    private let read: @Sendable (AuthenticationContext) async throws -> SecurityToken

    /// A source that runs `read` for every token request.
    ///
    /// - Parameters:
    ///   - name: What the source is, for messages (never the token).
    ///   - read: Gives the token to present now.
    public init(name: String, _ read: @escaping @Sendable (AuthenticationContext) async throws -> SecurityToken) {
        self.name = name
        self.read = read
    }

    /// The token to present now.
    public func token(for context: AuthenticationContext) async throws -> SecurityToken {
        try await read(context)
    }

    /// Always `value`, of `type`.
    public static func fixed(_ value: String, type: TokenTypeURI) -> SecurityTokenSource {
        SecurityTokenSource(name: "a fixed \(type)") { _ in SecurityToken(value, type: type) }
    }

    /// The current access token of `authenticator`, refreshed or obtained first when it needs
    /// to be: when that authenticator refreshes, the next exchange presents the new token.
    public static func accessToken(of authenticator: OAuthAuthenticator) -> SecurityTokenSource {
        SecurityTokenSource(name: "the access token of another authenticator") { _ in
            SecurityToken(try await authenticator.validCredential().accessToken, type: .accessToken)
        }
    }

    /// The ID token of `authenticator`'s current session, refreshed first when the session
    /// needs it: when its access token does, and when the ID token itself has expired or is about
    /// to (its `exp` within a quarter of its lifetime, at most 10 s, by the context's clock),
    /// since a provider refuses an expired ID token as a subject token. A refresh at an OpenID
    /// provider returns a new ID token; it is shared and coordinated as every refresh is.
    ///
    /// - Throws: `AuthenticationError` `missingCredential` when the session has no ID token;
    ///   `excessiveRefresh` when the provider's refreshes keep returning an expired one.
    public static func idToken(of authenticator: OAuthAuthenticator) -> SecurityTokenSource {
        SecurityTokenSource(name: "the ID token of another authenticator") { context in
            let now = context.clock.now
            let token = try await authenticator.validCredential { token in
                guard let idToken = token.idToken else { return true }  // nothing to refresh for
                return !Self.expiresSoon(idToken, now: now)
            }
            guard let idToken = token.idToken else {
                throw AuthenticationError(
                    code: .missingCredential,
                    message: "The session has no ID token to present; sign in with OpenID Connect.")
            }
            return SecurityToken(idToken, type: .idToken)
        }
    }

    /// Whether the JWT `token` expires within a quarter of its lifetime (at most 10 s) of `now`;
    /// `false` for a token whose `exp` cannot be read (the provider judges it).
    static func expiresSoon(_ token: String, now: Date) -> Bool {
        guard let claims = JWTClaimsPeek(token), let expiry = claims.expiry else { return false }
        let lifetime = claims.issuedAt.map { expiry.timeIntervalSince($0) } ?? 40
        return expiry.timeIntervalSince(now) <= Swift.min(10, Swift.max(lifetime, 0) / 4)
    }

    /// The source's name.
    public var description: String { name }
}
