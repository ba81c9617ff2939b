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
    private let pending = Locked<(redirectURI: URL, waiter: RedirectWaiter)?>(nil)

    /// Creates the agent; `open` presents the authorization URL.
    public init(open: @escaping @Sendable (URL) async throws -> Void) {
        self.open = open
    }

    /// Starts an attempt for `redirectURI` (kept as is).
    public func begin(redirectURI: URL) async throws -> any AuthorizationUserAgentSession {
        let waiter = RedirectWaiter()
        pending.withLock { $0 = (redirectURI, waiter) }
        return Session(redirectURI: redirectURI, waiter: waiter, agent: self)
    }

    /// Hands a redirect URL in; returns `true` when it belongs to the attempt in progress
    /// (same scheme, host and path as its redirect URI).
    @discardableResult
    public func handleRedirect(_ url: URL) -> Bool {
        let match = pending.withLock { pending -> RedirectWaiter? in
            guard let current = pending, Self.matches(url, current.redirectURI) else { return nil }
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
            try await agent.open(authorizationURL)
            return try await waiter.wait()
        }

        func close() async {
            waiter.finish(.failure(CancellationError()))
            agent.pending.withLock { if $0?.waiter === waiter { $0 = nil } }
        }
    }
}
