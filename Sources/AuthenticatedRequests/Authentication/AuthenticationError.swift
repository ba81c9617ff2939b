import Foundation

/// Why a credential could not be had for a request.
///
/// Switch on ``code``; the set of codes can grow. ``underlyingError`` carries the error from
/// the refresh, e.g. an `OAuthError` with the server's `error_description`.
public struct AuthenticationError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// There is no credential and no way to get one; the user must sign in. No request was sent.
        public static let missingCredential = Code("missing credential")
        /// The server said the grant is dead (e.g. `invalid_grant` on refresh); the credential was
        /// cleared and the user must sign in again.
        public static let reauthenticationRequired = Code("re-authentication required")
        /// The refresh failed for another reason (network, server error, the server's
        /// `Retry-After` still running); the credential was kept.
        public static let refreshFailed = Code("refresh failed")
        /// Obtaining a first credential failed (e.g. the client credentials grant was refused);
        /// nothing was stored. Not a refresh: there was no credential to refresh.
        public static let obtainFailed = Code("obtain failed")
        /// More refreshes than allowed happened within the window; no further refresh was attempted.
        public static let excessiveRefresh = Code("excessive refresh")
        /// A process died after it sent a refresh and before it stored the result, so the stored
        /// refresh token may already be spent. Nothing was sent. Sign in again, or, for a server
        /// that does not rotate refresh tokens, call
        /// ``AuthenticationInterceptor/resolveUnknownRefreshOutcome(_:)`` and retry.
        public static let refreshOutcomeUnknown = Code("refresh outcome unknown")
        /// The credential expired while the request was under way: a refreshed credential had
        /// expired before the request could be sent, or the retried request was rejected after
        /// its credential expired. Usually an overloaded machine or very short-lived tokens; a new
        /// request gets a new credential.
        public static let expiredInFlight = Code("expired in flight")
        /// The request's URL is outside the resource the credential was issued for
        /// (``ResourceBoundary``): nothing was sent, obtained or refreshed.
        public static let foreignResource = Code("foreign resource")
        /// The token is not an access token (`token_type` `N_A`, or an `issued_token_type` of an
        /// ID-JAG, ID token, SAML assertion or refresh token, RFC 8693 §2.2.1): it is never sent
        /// as one, whatever its `token_type`. Nothing was sent.
        public static let notAnAccessToken = Code("not an access token")
        /// The request would have sent a credential over plain `http` to a non-loopback host.
        public static let insecureTransport = Code("insecure transport")
        /// The token is bound to a key (DPoP) that cannot be used: no proof of possession is
        /// configured, or the key is gone. The token was not sent.
        public static let keyUnavailable = Code("key unavailable")
        /// The token is bound to a client certificate (RFC 8705) that the transport does not
        /// present, and a refresh over the transport's certificate did not give one bound to it:
        /// the token was not sent.
        public static let certificateMismatch = Code("certificate mismatch")
        /// The stored credential could not be read (e.g. a corrupt file); it was left untouched.
        public static let storeFailed = Code("store failed")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// A sentence for people, without secrets.
    public let message: String
    /// The error behind this one, e.g. the refresh's error.
    public let underlyingError: (any Error)?

    /// Creates an error.
    public init(code: Code, message: String, underlyingError: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlyingError = underlyingError
    }

    /// `AuthenticationError(code): message (underlying: …)`, secrets redacted.
    public var description: String {
        var text = "AuthenticationError(\(code)): \(message)"
        if let underlyingError {
            text += " (underlying: \(Redaction.redact(String(describing: underlyingError))))"
        }
        return text
    }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
