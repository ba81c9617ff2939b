import Foundation

/// A token type identifier (RFC 8693 §3): what kind of security token a `subject_token`,
/// `actor_token`, `requested_token_type` or `issued_token_type` is. The RFC's constants, the
/// Identity Assertion JWT Authorization Grant's ``idJAG``, and any other URI.
public struct TokenTypeURI: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    /// The URI, e.g. `urn:ietf:params:oauth:token-type:access_token`.
    public let rawValue: String

    /// Creates a type from its URI.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Creates a type from a literal URI.
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// `urn:ietf:params:oauth:token-type:access_token`: an OAuth 2.0 access token.
    public static let accessToken: TokenTypeURI = "urn:ietf:params:oauth:token-type:access_token"
    /// `urn:ietf:params:oauth:token-type:refresh_token`: an OAuth 2.0 refresh token.
    public static let refreshToken: TokenTypeURI = "urn:ietf:params:oauth:token-type:refresh_token"
    /// `urn:ietf:params:oauth:token-type:id_token`: an OpenID Connect ID token.
    public static let idToken: TokenTypeURI = "urn:ietf:params:oauth:token-type:id_token"
    /// `urn:ietf:params:oauth:token-type:saml1`: a base64url-encoded SAML 1.1 assertion.
    public static let saml1: TokenTypeURI = "urn:ietf:params:oauth:token-type:saml1"
    /// `urn:ietf:params:oauth:token-type:saml2`: a base64url-encoded SAML 2.0 assertion.
    public static let saml2: TokenTypeURI = "urn:ietf:params:oauth:token-type:saml2"
    /// `urn:ietf:params:oauth:token-type:jwt`: a JWT (RFC 7519).
    public static let jwt: TokenTypeURI = "urn:ietf:params:oauth:token-type:jwt"
    /// `urn:ietf:params:oauth:token-type:id-jag`: an Identity Assertion JWT Authorization Grant
    /// (cross-app access; MCP's Enterprise-Managed Authorization), issued with `token_type` `N_A`.
    public static let idJAG: TokenTypeURI = "urn:ietf:params:oauth:token-type:id-jag"

    /// The URI.
    public var description: String { rawValue }
}
