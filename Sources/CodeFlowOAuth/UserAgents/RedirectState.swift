import AuthenticatedRequests
import Foundation

/// Reads the `state` of a redirect and of the authorization URL it answers, so a user agent can
/// let only the redirect of its own request end the flow.
package enum RedirectState {
    /// The form-decoded value of `name` in the query of `url`; the first wins.
    package static func parameter(_ name: String, of url: URL) -> String? {
        AuthorizationResponse.formDecodedQuery(of: url)[name]
    }

    /// The form-decoded value of `name` in the fragment of `url`; the first wins.
    package static func fragmentParameter(_ name: String, of url: URL) -> String? {
        AuthorizationResponse.formDecoded(
            URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedFragment)[
                name]
    }

    /// The `state` parameter of `url`; for a signed response (JARM: one `response` parameter, in
    /// the query or, for `fragment.jwt`, the fragment), the `state` claim read without
    /// verification, only to tell which flow the redirect is for: the flow verifies the response
    /// before using anything in it.
    package static func state(of url: URL) -> String? {
        if let state = parameter("state", of: url) { return state }
        for response in [parameter("response", of: url), fragmentParameter("response", of: url)] {
            if let response, let state = unverifiedState(ofSignedResponse: response) { return state }
        }
        return nil
    }

    /// The `state` claim of a signed response, read without verification.
    private static func unverifiedState(ofSignedResponse response: String) -> String? {
        let parts = response.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
            let claims = try? JSONValue(parsing: payload).objectValue
        else { return nil }
        return claims["state"]?.stringValue
    }
}
