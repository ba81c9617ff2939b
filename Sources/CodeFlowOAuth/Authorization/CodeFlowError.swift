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
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// What happened, for people; never a secret.
    public let message: String
    /// The error the redirect carried, when the flow stopped for another reason first: an
    /// `access_denied` on a redirect without the promised `iss` is still visible here, next to
    /// the mix-up warning of ``Code/issuerMismatch``.
    public let serverError: OAuthError?

    init(_ code: Code, _ message: String, serverError: OAuthError? = nil) {
        self.code = code
        self.message = message
        self.serverError = serverError
    }

    /// `CodeFlowError(code): message`, and the redirect's error if it carried one.
    public var description: String {
        "CodeFlowError(\(code)): \(message)" + (serverError.map { " The redirect also said: \($0)" } ?? "")
    }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
