import AuthenticatedRequests
import Foundation

/// The user agent for apps with a custom URL scheme (e.g. `com.example.app:/oauth`): the app opens
/// the authorization URL its own way and hands the redirect back from its URL handler.
///
/// ```swift
/// let agent = CustomSchemeUserAgent { url in await UIApplication.shared.open(url) }
/// // in the app's URL handler:
/// func application(_ app: UIApplication, open url: URL, options: ...) -> Bool {
///     agent.handleRedirect(url)
/// }
/// ```
public final class CustomSchemeUserAgent: AuthorizationUserAgent {
    private let open: @Sendable (URL) async throws -> Void
    private let pending = Locked<Pending?>(nil)

    private struct Pending: Sendable {
        let redirectURI: URL
        let waiter: RedirectWaiter
        /// The `state` of the authorization URL, once presented.
        var expectedState: String?
    }

    /// Creates the agent; `open` presents the authorization URL.
    public init(open: @escaping @Sendable (URL) async throws -> Void) {
        self.open = open
    }

    /// Starts an attempt for `redirectURI` (kept as is).
    public func begin(redirectURI: URL) async throws -> any AuthorizationUserAgentSession {
        let waiter = RedirectWaiter()
        pending.withLock { $0 = Pending(redirectURI: redirectURI, waiter: waiter) }
        return Session(redirectURI: redirectURI, waiter: waiter, agent: self)
    }

    /// Hands a redirect URL in; returns `true` when it belongs to the attempt in progress: same
    /// scheme, host and path as its redirect URI, and the `state` of its authorization request.
    /// Any other URL is ignored and the attempt keeps waiting.
    @discardableResult
    public func handleRedirect(_ url: URL) -> Bool {
        let match = pending.withLock { pending -> RedirectWaiter? in
            guard let current = pending, Self.matches(url, current.redirectURI),
                let expected = current.expectedState, let state = RedirectState.state(of: url),
                constantTimeEqual(state, expected)
            else { return nil }
            pending = nil
            return current.waiter
        }
        match?.finish(.success(url))
        return match != nil
    }

    static func matches(_ url: URL, _ redirectURI: URL) -> Bool {
        url.scheme?.lowercased() == redirectURI.scheme?.lowercased()
            && (url.host ?? "") == (redirectURI.host ?? "")
            && url.path == redirectURI.path
    }

    private struct Session: AuthorizationUserAgentSession {
        let redirectURI: URL
        let waiter: RedirectWaiter
        let agent: CustomSchemeUserAgent

        func present(_ authorizationURL: URL) async throws -> URL {
            guard let state = RedirectState.state(of: authorizationURL) else {
                throw CodeFlowError(.invalidConfiguration, "The authorization URL has no state.")
            }
            return try await present(authorizationURL, state: state)
        }

        func present(_ authorizationURL: URL, state: String) async throws -> URL {
            agent.pending.withLock { pending in
                if pending?.waiter === waiter { pending?.expectedState = state }
            }
            try await agent.open(authorizationURL)
            return try await waiter.wait()
        }

        func close() async {
            waiter.finish(.failure(CancellationError()))
            agent.pending.withLock { if $0?.waiter === waiter { $0 = nil } }
        }
    }
}
