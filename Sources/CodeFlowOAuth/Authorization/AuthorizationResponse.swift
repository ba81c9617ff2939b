import AuthenticatedRequests
import Foundation

/// A validated authorization response (RFC 6749 §4.1.2): the code, safe to exchange.
public struct AuthorizationResponse: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// `code`.
    public let code: String
    /// `iss` (RFC 9207), when the server sent it.
    public let issuer: String?
    /// Every other query parameter of the redirect.
    public let additionalParameters: [String: String]

    /// Parses and validates the redirect URL for `request`.
    ///
    /// Only the query is read; a fragment is ignored. In order: `state` must be present and equal
    /// to the request's (compared in constant time); an `error` becomes an `OAuthError`; `iss`
    /// must equal `issuer` when present, and be present when `requiresIssuer`; `code` must be present.
    public init(redirect: URL, request: AuthorizationRequest, issuer: String?, requiresIssuer: Bool) throws {
        var parameters = Self.formDecodedQuery(of: redirect)

        guard let state = parameters.removeValue(forKey: "state") else {
            throw CodeFlowError(.missingState, "The redirect has no state; the code was not used.")
        }
        guard constantTimeEqual(state, request.state) else {
            throw CodeFlowError(
                .stateMismatch, "The redirect's state does not match the request's; the code was not used.")
        }
        let returnedIssuer = parameters.removeValue(forKey: "iss")
        // What the server wrote is redacted of the request's secrets, in case it echoes them.
        let secrets = [request.state] + (request.pkce.map { [$0.verifier] } ?? [])
        let redact = { (text: String) in Redaction.redact(text, removing: secrets) }
        let serverError = parameters.removeValue(forKey: "error").map { error in
            OAuthError(
                code: OAuthErrorCode(rawValue: redact(error)),
                errorDescription: parameters["error_description"].map(redact),
                errorURI: parameters["error_uri"].flatMap { redact($0) == $0 ? URL(string: $0) : nil }
            )
        }
        // RFC 9207 §2.4: a response from an unverified issuer is not processed; what it says is
        // kept only as labelled raw data, never in the message.
        if let returnedIssuer, let issuer, returnedIssuer != issuer {
            throw CodeFlowError(
                .issuerMismatch,
                "The redirect names another issuer than \(issuer) (RFC 9207): a possible mix-up attack. "
                    + "Nothing in it was used.",
                unverifiedServerError: serverError, unverifiedIssuer: returnedIssuer)
        }
        if requiresIssuer, returnedIssuer == nil {
            throw CodeFlowError(
                .issuerMismatch,
                "The server promised an iss parameter (RFC 9207) and the redirect has none. Nothing in it was used.",
                unverifiedServerError: serverError)
        }
        if let serverError { throw serverError }
        guard let code = parameters.removeValue(forKey: "code"), !code.isEmpty else {
            throw CodeFlowError(.missingCode, "The redirect has neither a code nor an error.")
        }
        self.code = code
        self.issuer = returnedIssuer
        self.additionalParameters = parameters
    }

    /// The query's parameters, decoded as `application/x-www-form-urlencoded` (RFC 6749 §4.1.2:
    /// `+` is a space); the first of repeated names wins.
    static func formDecodedQuery(of url: URL) -> [String: String] {
        formDecoded(URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery)
    }

    /// `encoded` decoded as `application/x-www-form-urlencoded`; the first of repeated names wins.
    static func formDecoded(_ encoded: String?) -> [String: String] {
        var parameters: [String: String] = [:]
        for pair in (encoded ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            if parameters[parts[0]] == nil { parameters[parts[0]] = parts.count > 1 ? parts[1] : "" }
        }
        return parameters
    }

    /// The response without the code or any other parameter's value.
    public var description: String {
        "AuthorizationResponse(code: \(Redaction.placeholder), issuer: \(issuer ?? "none"), "
            + "additionalParameters: \(additionalParameters.keys.sorted()))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror showing only the redacted description, so `dump` and debuggers do not show the code.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
