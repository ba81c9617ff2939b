import CodeFlowOAuth
import Foundation

/// The user agent of a sign-in through a loopback redirect URI whose port was chosen when the
/// client registered (``ClientRegistrar``): it listens on that port, and when another sign-in of
/// the same registration holds it (several at once), on any port, as RFC 8252 §7.3 lets servers
/// accept. A server that compares redirect URIs exactly then refuses that one sign-in; the others
/// go through.
struct RegisteredPortUserAgent: AuthorizationUserAgent {
    let base: any AuthorizationUserAgent

    func begin(redirectURI: URL) async throws -> any AuthorizationUserAgentSession {
        do {
            return try await base.begin(redirectURI: redirectURI)
        } catch let error as CodeFlowError where error.code == .redirectPortUnavailable {
            guard var components = URLComponents(url: redirectURI, resolvingAgainstBaseURL: false) else { throw error }
            components.port = nil
            guard let anyPort = components.url else { throw error }
            return try await base.begin(redirectURI: anyPort)
        }
    }
}
