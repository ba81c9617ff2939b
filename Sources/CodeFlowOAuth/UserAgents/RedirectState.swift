import Foundation

/// Reads the `state` of a redirect and of the authorization URL it answers, so a user agent can
/// let only the redirect of its own request end the flow.
package enum RedirectState {
    /// The form-decoded value of `name` in the query of `url`; the first wins.
    package static func parameter(_ name: String, of url: URL) -> String? {
        AuthorizationResponse.formDecodedQuery(of: url)[name]
    }

    /// The `state` parameter of `url`.
    package static func state(of url: URL) -> String? {
        parameter("state", of: url)
    }
}
