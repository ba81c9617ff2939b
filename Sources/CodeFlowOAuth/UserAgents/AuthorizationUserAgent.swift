import Foundation

/// Shows the authorization page to the user and brings the redirect back: a system browser with
/// a loopback receiver (``LoopbackUserAgent``), an app's custom scheme (``CustomSchemeUserAgent``),
/// or your own (e.g. `ASWebAuthenticationSession`).
public protocol AuthorizationUserAgent: Sendable {
    /// Gets ready to receive a redirect for `redirectURI` and returns the session that will.
    /// A loopback agent binds its port here, so the session's redirect URI carries it.
    func begin(redirectURI: URL) async throws -> any AuthorizationUserAgentSession
}

/// One authorization attempt of a user agent.
public protocol AuthorizationUserAgentSession: Sendable {
    /// The redirect URI the authorization request must carry.
    var redirectURI: URL { get }
    /// Presents `authorizationURL` and returns the URL the server redirected to.
    /// - Throws: `CancellationError` when the task is cancelled, ``CodeFlowError`` on timeout.
    func present(_ authorizationURL: URL) async throws -> URL
    /// Presents `authorizationURL`, whose request carries `state`, and returns the URL the server
    /// redirected to. A pushed request's URL (RFC 9126) has no `state` of its own, so a user agent
    /// that lets only its own redirect end the flow takes it from here. The default calls
    /// ``present(_:)``.
    func present(_ authorizationURL: URL, state: String) async throws -> URL
    /// Gets ready to receive a signed authorization response (JARM) in `mode`; called before the
    /// request is sent. The default receives the query and fragment modes (a session that hands
    /// back the whole redirect URL) and refuses `form_post.jwt` and modes it does not know.
    /// - Throws: ``CodeFlowError`` (`invalidConfiguration`) when the session cannot receive
    ///   `mode`; nothing has been sent then.
    func receiveSignedResponse(in mode: SignedResponseMode) throws
    /// Releases what the session holds (a socket); called after success, failure and cancellation.
    func close() async
}

extension AuthorizationUserAgentSession {
    /// Calls ``present(_:)``.
    public func present(_ authorizationURL: URL, state: String) async throws -> URL {
        try await present(authorizationURL)
    }

    /// Receives ``SignedResponseMode/jwt``, ``SignedResponseMode/queryJWT`` and
    /// ``SignedResponseMode/fragmentJWT``; throws for any other mode.
    public func receiveSignedResponse(in mode: SignedResponseMode) throws {
        guard [.jwt, .queryJWT, .fragmentJWT].contains(mode) else {
            throw CodeFlowError(
                .invalidConfiguration,
                "This user agent cannot receive a response_mode=\(mode) response; nothing was sent.")
        }
    }
}
