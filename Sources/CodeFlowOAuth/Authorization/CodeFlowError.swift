import AuthenticatedRequests
import Foundation

/// Why an authorization code flow stopped before it had a token. An error redirect from the
/// server is an `OAuthError` instead (e.g. `access_denied`).
public struct CodeFlowError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The redirect had no `state`; the code was not exchanged.
        public static let missingState = Code("missing state")
        /// The redirect's `state` differs from the request's (possible CSRF); the code was not exchanged.
        public static let stateMismatch = Code("state mismatch")
        /// The redirect had neither `code` nor `error`.
        public static let missingCode = Code("missing code")
        /// The redirect's `iss` differs from the issuer, or is missing where required (RFC 9207).
        public static let issuerMismatch = Code("issuer mismatch")
        /// A signed authorization response (JARM) was asked for and the redirect has none.
        public static let missingSignedResponse = Code("missing signed response")
        /// No redirect arrived in time.
        public static let timedOut = Code("timed out")
        /// No browser could be opened; the user must open the URL (the flow keeps waiting).
        public static let browserUnavailable = Code("browser unavailable")
        /// The configuration cannot produce an authorization request.
        public static let invalidConfiguration = Code("invalid configuration")
        /// The authorization endpoint is not `https` (or `http` to a loopback address): nothing
        /// was opened.
        public static let insecureAuthorizationEndpoint = Code("insecure authorization endpoint")
        /// The user agent could not show the authorization page or bring the redirect back (a
        /// web authentication session that failed or returned to another URL).
        public static let userAgentFailed = Code("user agent failed")
        /// The loopback receiver could not listen on the port its redirect URI names (another
        /// sign-in or program holds it); nothing was opened.
        public static let redirectPortUnavailable = Code("redirect port unavailable")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// What happened, for people; never a secret.
    public let message: String
    /// The `error`, `error_description` and `error_uri` of a redirect that could not be
    /// verified, as the redirect carried them: raw, unverified data.
    ///
    /// Set only with ``Code/issuerMismatch``: the redirect came from another issuer than
    /// expected, or without the `iss` the server promised (RFC 9207 §2.4), so nothing in it was
    /// acted on, and it is never shown in ``description`` or in events. It is kept for a caller
    /// that wants to record what an unverified party sent; do not display it as the server's word.
    public let unverifiedServerError: OAuthError?
    /// The `iss` of a redirect from an unexpected issuer, as it came: raw, unverified data, never
    /// shown in ``description``.
    public let unverifiedIssuer: String?

    /// The error an unverified redirect carried.
    @available(*, deprecated, renamed: "unverifiedServerError", message: "Unverified data: never display it.")
    public var serverError: OAuthError? { unverifiedServerError }

    init(_ code: Code, _ message: String, unverifiedServerError: OAuthError? = nil, unverifiedIssuer: String? = nil) {
        self.code = code
        self.message = message
        self.unverifiedServerError = unverifiedServerError
        self.unverifiedIssuer = unverifiedIssuer
    }

    /// `CodeFlowError(code): message`. Nothing an unverified redirect said is included.
    public var description: String { "CodeFlowError(\(code)): \(message)" }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
