import Foundation

/// An error response from an authorization server (RFC 6749 §5.2), or an error redirect
/// (§4.1.2.1): the grant or request was refused.
///
/// This is an OAuth error, not a transport failure: retrying the same request will not help.
public struct OAuthError: RetryAfterError, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// `error`: the error code.
    public var code: OAuthErrorCode
    /// `error_description`: the server's explanation for developers, if any.
    public var errorDescription: String?
    /// `error_uri`: a page about the error, if any.
    public var errorURI: URL?
    /// The HTTP status of the response, when it came from an endpoint.
    public var statusCode: Int?
    /// The `WWW-Authenticate` header of the response, if any (e.g. for `invalid_client`).
    public var wwwAuthenticate: String?
    /// Until when the server asked not to be called again (`Retry-After` on a `429` or `503`).
    public var retryAfter: Date?

    /// Creates an error.
    public init(
        code: OAuthErrorCode,
        errorDescription: String? = nil,
        errorURI: URL? = nil,
        statusCode: Int? = nil,
        wwwAuthenticate: String? = nil,
        retryAfter: Date? = nil
    ) {
        self.code = code
        self.errorDescription = errorDescription
        self.errorURI = errorURI
        self.statusCode = statusCode
        self.wwwAuthenticate = wwwAuthenticate
        self.retryAfter = retryAfter
    }

    /// What to check for the codes that point at the client's own configuration or grant: the
    /// client id and its secret or key for `invalid_client`, the grant for `invalid_grant`, the
    /// scope for `invalid_scope`, the client's registration for `unauthorized_client` and
    /// `unsupported_grant_type`; `nil` for the others.
    public var remedy: String? {
        switch code {
        case .invalidClient:
            "Check the client id and its secret or key, and the authentication method the server expects "
                + "(client_secret_basic, client_secret_post, private_key_jwt): where the app or profile sets them."
        case .invalidGrant:
            "The code, refresh token or assertion is invalid, expired or revoked: sign in again."
        case .invalidScope:
            "Check the scope asked for: the server does not grant it to this client."
        case .unauthorizedClient, .unsupportedGrantType:
            "Check the client's registration: the server does not allow this grant type for it."
        default:
            nil
        }
    }

    /// `OAuthError(invalid_grant, status 400): description <uri>. What to check.`, secrets
    /// redacted: the server's words, then ``remedy`` when there is one.
    public var description: String {
        var text = "OAuthError(\(code.rawValue)"
        if let statusCode { text += ", status \(statusCode)" }
        text += ")"
        if let errorDescription { text += ": \(Redaction.redact(errorDescription))" }
        if let errorURI { text += " <\(errorURI.redactedForDisplay)>" }
        if let remedy { text += (text.hasSuffix(".") ? " " : ". ") + remedy }
        return text
    }

    /// Same as ``description``.
    public var debugDescription: String { description }
}

/// An OAuth error code. The codes of RFC 6749, RFC 8628 and RFC 6750 are constants; any other
/// code a server sends is kept as is.
public struct OAuthErrorCode: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
    /// The code as sent, e.g. `invalid_grant`.
    public let rawValue: String

    /// Creates a code from its wire value.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Creates a code from a literal.
    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }

    /// `invalid_request` (RFC 6749 §5.2).
    public static let invalidRequest: OAuthErrorCode = "invalid_request"
    /// `invalid_client` (RFC 6749 §5.2): client authentication failed.
    public static let invalidClient: OAuthErrorCode = "invalid_client"
    /// `invalid_grant` (RFC 6749 §5.2): the code or refresh token is invalid, expired or revoked.
    public static let invalidGrant: OAuthErrorCode = "invalid_grant"
    /// `unauthorized_client` (RFC 6749 §5.2).
    public static let unauthorizedClient: OAuthErrorCode = "unauthorized_client"
    /// `unsupported_grant_type` (RFC 6749 §5.2).
    public static let unsupportedGrantType: OAuthErrorCode = "unsupported_grant_type"
    /// `invalid_scope` (RFC 6749 §5.2).
    public static let invalidScope: OAuthErrorCode = "invalid_scope"
    /// `access_denied` (RFC 6749 §4.1.2.1, RFC 8628 §3.5): the user or server refused.
    public static let accessDenied: OAuthErrorCode = "access_denied"
    /// `unsupported_response_type` (RFC 6749 §4.1.2.1).
    public static let unsupportedResponseType: OAuthErrorCode = "unsupported_response_type"
    /// `server_error` (RFC 6749 §4.1.2.1).
    public static let serverError: OAuthErrorCode = "server_error"
    /// `temporarily_unavailable` (RFC 6749 §4.1.2.1).
    public static let temporarilyUnavailable: OAuthErrorCode = "temporarily_unavailable"
    /// `authorization_pending` (RFC 8628 §3.5): keep polling.
    public static let authorizationPending: OAuthErrorCode = "authorization_pending"
    /// `slow_down` (RFC 8628 §3.5): keep polling, 5 seconds slower.
    public static let slowDown: OAuthErrorCode = "slow_down"
    /// `expired_token` (RFC 8628 §3.5): the device code expired.
    public static let expiredToken: OAuthErrorCode = "expired_token"
    /// `invalid_target` (RFC 8707 §2, RFC 8693 §2.2.2): the requested resource or audience is
    /// invalid, unknown, or not allowed for this client.
    public static let invalidTarget: OAuthErrorCode = "invalid_target"
    /// `invalid_token` (RFC 6750 §3.1).
    public static let invalidToken: OAuthErrorCode = "invalid_token"
    /// `insufficient_scope` (RFC 6750 §3.1).
    public static let insufficientScope: OAuthErrorCode = "insufficient_scope"
    /// `invalid_dpop_proof` (RFC 9449 §5, §7.1): the DPoP proof was refused; a refresh does not
    /// help.
    public static let invalidDPoPProof: OAuthErrorCode = "invalid_dpop_proof"
    /// `use_dpop_nonce` (RFC 9449 §8, §9): send the request again with the server's `DPoP-Nonce`.
    public static let useDPoPNonce: OAuthErrorCode = "use_dpop_nonce"
}
