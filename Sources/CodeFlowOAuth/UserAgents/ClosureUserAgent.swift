import Foundation

/// A user agent in one closure: it is given the authorization URL and returns the URL the
/// authorization server redirected to. For agents and tests that drive the authorization page
/// themselves (a headless browser, an approval service, a person pasting the redirect URL).
///
/// ```swift
/// let agent = ClosureUserAgent { authorizationURL in
///     try await approvals.approve(authorizationURL)  // returns the redirect URL, with its code
/// }
/// let signIn = ResourceSignIn(
///     resource: serverURL, registration: .dynamic(clientName: "My Agent"),
///     method: .browser(agent), store: store)
/// ```
///
/// The redirect URI is the one the sign-in asks for, kept as is. What the closure returns is
/// checked like any redirect (its `state`, `iss` and code, by ``CodeFlowManager``); a closure
/// that throws ends the sign-in with its error.
public struct ClosureUserAgent: AuthorizationUserAgent {
    private let present: @Sendable (URL) async throws -> URL

    /// Creates the agent; `present` gets the authorization URL and returns the redirect URL.
    public init(_ present: @escaping @Sendable (_ authorizationURL: URL) async throws -> URL) {
        self.present = present
    }

    /// Starts an attempt for `redirectURI`, kept as is.
    public func begin(redirectURI: URL) async throws -> any AuthorizationUserAgentSession {
        Session(redirectURI: redirectURI, present: present)
    }

    private struct Session: AuthorizationUserAgentSession {
        let redirectURI: URL
        let present: @Sendable (URL) async throws -> URL

        func present(_ authorizationURL: URL) async throws -> URL {
            try await present(authorizationURL)
        }

        func close() async {}
    }
}
