import AuthenticatedRequests
import Foundation

/// A reply from an authorization server endpoint that is neither a token nor an OAuth error:
/// HTML, an empty or oversized body, JSON without `access_token`, an unexpected status.
///
/// OAuth errors (RFC 6749 §5.2 bodies) are `OAuthError` instead.
public struct TokenEndpointError: RetryAfterError, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The body is not a JSON object (HTML error page, empty, invalid UTF-8).
        public static let invalidResponse = Code("invalid response")
        /// The body is larger than the cap (1 MiB).
        public static let responseTooLarge = Code("response too large")
        /// The JSON lacks a required field, e.g. `access_token`.
        public static let missingField = Code("missing field")
        /// A field has a value that cannot be used: a number that is not finite, negative, zero
        /// where zero makes no sense, or not a number at all (see ``TokenEndpointError/field``).
        public static let invalidField = Code("invalid field")
        /// The status is not 2xx and the body is not an OAuth error.
        public static let unexpectedStatus = Code("unexpected status")
        /// The endpoint is plain `http` on a non-loopback host; no secret was sent.
        public static let insecureEndpoint = Code("insecure endpoint")
        /// The endpoint's URL is missing from the configuration or metadata.
        public static let missingEndpoint = Code("missing endpoint")
        /// A setting cannot be sent as it is (e.g. a resource indicator with a fragment); nothing
        /// was sent.
        public static let invalidConfiguration = Code("invalid configuration")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// What went wrong, for people; no secrets.
    public let message: String
    /// The HTTP status, when a response arrived.
    public let statusCode: Int?
    /// The `Content-Type` of the response, when a response arrived.
    public let contentType: String?
    /// The start of the body, redacted.
    public let bodySnippet: String?
    /// The error behind this one (e.g. a JSON parsing error).
    public let underlyingError: (any Error)?
    /// The field at fault, for ``Code/missingField`` and ``Code/invalidField``.
    public let field: String?
    /// Until when the server asked not to be called again (`Retry-After` on a `429` or `503`).
    public let retryAfter: Date?

    init(
        _ code: Code,
        _ message: String,
        statusCode: Int? = nil,
        contentType: String? = nil,
        body: Data? = nil,
        secrets: [String] = [],
        field: String? = nil,
        retryAfter: Date? = nil,
        underlyingError: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.statusCode = statusCode
        self.contentType = contentType
        self.bodySnippet = body.map { Redaction.snippet(of: $0, limit: 120, removing: secrets) }
        self.field = field
        self.retryAfter = retryAfter
        self.underlyingError = underlyingError
    }

    /// An error about `reply`, its body redacted of what the request sent.
    init(
        _ code: Code,
        _ message: String,
        reply: ServerReply,
        field: String? = nil,
        retryAfter: Date? = nil,
        underlyingError: (any Error)? = nil
    ) {
        self.init(
            code,
            message,
            statusCode: reply.statusCode,
            contentType: reply.contentType,
            body: reply.body,
            secrets: reply.sentSecrets,
            field: field,
            retryAfter: retryAfter,
            underlyingError: underlyingError
        )
    }

    /// A one-line summary naming status and content type, with a redacted snippet.
    public var description: String {
        var text = "TokenEndpointError(\(code)): \(message)"
        if let statusCode { text += " [status \(statusCode)" + (contentType.map { ", \($0)" } ?? "") + "]" }
        if let bodySnippet, !bodySnippet.isEmpty { text += " body: \(bodySnippet)" }
        return text
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror showing only the description.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
