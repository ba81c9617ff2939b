import Foundation

/// Something the ``AuthenticationInterceptor`` did, for logs and metrics. Carries no secret.
public struct AuthenticationEvent: Sendable, CustomStringConvertible {
    /// What happened.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// A first credential was obtained (or configured).
        public static let credentialObtained = Kind("credential obtained")
        /// A credential was read from the token store.
        public static let credentialLoaded = Kind("credential loaded")
        /// The credential was refreshed.
        public static let credentialRefreshed = Kind("credential refreshed")
        /// A refresh failed; see ``AuthenticationEvent/error``.
        public static let refreshFailed = Kind("refresh failed")
        /// The credential was cleared, from memory and from the store.
        public static let credentialCleared = Kind("credential cleared")
        /// A request rejected for its credential was sent again; see ``AuthenticationEvent/url``.
        public static let requestRetried = Kind("request retried")
        /// A redirect of an authenticated request left the credential's origin or resource, and
        /// was followed without any credential; see ``AuthenticationEvent/url`` (the target).
        public static let redirectLeftBoundary = Kind("redirect left the credential's boundary")
        /// The token store failed to save or remove; see ``AuthenticationEvent/error``.
        public static let storeFailed = Kind("store failed")
        /// The kind's name.
        public var description: String { name }
    }

    /// What happened.
    public let kind: Kind
    /// When it happened, by the interceptor's clock.
    public let date: Date
    /// The request's URL without query, for ``Kind/requestRetried`` and ``Kind/redirectLeftBoundary``.
    public let url: String?
    /// The error, for ``Kind/refreshFailed`` and ``Kind/storeFailed``.
    public let error: (any Error)?

    init(_ kind: Kind, date: Date, url: URL? = nil, error: (any Error)? = nil) {
        self.kind = kind
        self.date = date
        self.url = url?.redactedForDisplay
        self.error = error
    }

    /// `kind` and, where present, the URL and a redacted error.
    public var description: String {
        var text = kind.description
        if let url { text += " \(url)" }
        if let error { text += ": \(Redaction.redact(String(describing: error)))" }
        return text
    }
}
