import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Why ``Resource/request(using:)`` failed, with the context to act on it.
///
/// Switch on ``code``; the set of codes can grow. Of the request only the method and URL are
/// kept (no headers, so no credentials), and the body snippet is bounded and redacted, so the
/// error is safe to log. For a request that an ``AuthenticatedResource`` sent, the redaction
/// also removes the values of the credential that was applied, of the one before it and of the
/// refresh token, wherever a server echoes them.
public struct ResourceError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// ``Resource/urlRequest(using:)`` threw; see ``ResourceError/underlyingError``.
        public static let invalidRequest = Code("invalid request")
        /// No HTTP response arrived; see ``ResourceError/underlyingError``.
        public static let transportFailed = Code("transport failed")
        /// The status was not accepted by ``Resource/validate(_:body:)``.
        public static let unacceptableStatus = Code("unacceptable status")
        /// The body could not be turned into the output; see ``ResourceError/underlyingError``.
        public static let decodingFailed = Code("decoding failed")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// The request's method; `nil` when the request could not be built.
    public let method: String?
    /// The request's URL; `nil` when the request could not be built.
    public let url: URL?
    /// The response, when one arrived.
    public let response: ResponseHead?
    /// The start of the response body (at most 256 bytes), with secret values redacted.
    public let bodySnippet: String?
    /// The error behind this one: a transport, decoding or request-building error.
    public let underlyingError: (any Error)?
    /// ``underlyingError`` as shown in ``description``: redacted when the error was made, while
    /// the secrets in play were known.
    private let underlyingSummary: String?

    /// The response's status code, when a response arrived.
    public var statusCode: Int? { response?.statusCode }

    /// The response's header fields, in order; empty when no response arrived.
    public var responseHeaders: HeaderFields { response?.headerFields ?? [] }

    /// The challenges of the response's `WWW-Authenticate` header (RFC 9110 §11.6.1), e.g.
    /// `DPoP error="invalid_dpop_proof"`; empty when there is none.
    public var challenges: [AuthenticationChallenge] {
        response?.value(forHTTPHeaderField: "WWW-Authenticate").map(AuthenticationChallenge.parse) ?? []
    }

    /// The OAuth error a resource server named in its challenge (RFC 6750 §3.1, RFC 9449 §7.1):
    /// e.g. `invalid_token`, `insufficient_scope`, `invalid_dpop_proof`; `nil` when none did.
    public var authenticationError: OAuthErrorCode? {
        challenges.lazy.compactMap(\.error).first.map { OAuthErrorCode(rawValue: $0) }
    }

    /// Creates an error; the body is reduced to a redacted snippet.
    public init(
        code: Code,
        method: String? = nil,
        url: URL? = nil,
        response: ResponseHead? = nil,
        body: Data? = nil,
        underlyingError: (any Error)? = nil
    ) {
        self.init(
            code: code, method: method, url: url, response: response, body: body, underlyingError: underlyingError,
            removing: [])
    }

    /// Creates an error whose snippet and description leave out each of `secrets` too (the
    /// credentials applied to the request), wherever the body or the underlying error shows them.
    package init(
        code: Code,
        method: String?,
        url: URL?,
        response: ResponseHead?,
        body: Data?,
        underlyingError: (any Error)?,
        removing secrets: [String]
    ) {
        self.code = code
        self.method = method
        self.url = url
        self.response = response
        self.bodySnippet = body.map { Redaction.snippet(of: $0, removing: secrets) }
        self.underlyingError = underlyingError
        self.underlyingSummary = underlyingError.map {
            Redaction.redact(String(describing: $0), removing: secrets)
        }
    }

    /// This error again, for the request `method` `url` and its whole `body`, leaving out
    /// `secrets`: how ``Resource/request(using:)`` completes an error that ``Resource/validate(_:body:)``
    /// threw without knowing the credential.
    package func completed(method: String, url: URL?, body: Data, removing secrets: [String]) -> ResourceError {
        ResourceError(
            code: code, method: self.method ?? method, url: self.url ?? url, response: response, body: body,
            underlyingError: underlyingError, removing: secrets)
    }

    /// The error for a response whose status was not accepted.
    public static func unacceptableStatus(response: ResponseHead, body: Data) -> ResourceError {
        ResourceError(code: .unacceptableStatus, response: response, body: body)
    }

    /// A one-line summary: code, status, URL without query, snippet and underlying error.
    public var description: String {
        var parts = ["ResourceError(\(code)"]
        if let statusCode { parts.append("status \(statusCode)") }
        if let url = response?.url ?? url { parts.append((method.map { "\($0) " } ?? "") + url.redactedForDisplay) }
        if let bodySnippet, !bodySnippet.isEmpty { parts.append("body: \(bodySnippet)") }
        if let underlyingSummary { parts.append("underlying: \(underlyingSummary)") }
        return parts.joined(separator: ", ") + ")"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
