import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The default ``HTTPTransport``: `URLSession`, with a session-level delegate that removes
/// credential headers when a redirect leaves the origin of the original request.
///
/// A request that gets no reply fails with an ``HTTPTransportError`` whose code names the class
/// of failure (refused, lost, timed out, TLS, DNS, not connected); the `URLError` is its
/// ``HTTPTransportError/underlyingError``.
///
/// The delegate is session-level on purpose: on Linux, `URLSession` calls
/// `willPerformHTTPRedirection` only on the session's delegate, and forwards a manually set
/// `Authorization` header to any host it is redirected to unless told otherwise.
///
/// Requests sent with ``HTTPTransportOptions/followsRedirects`` `false` go through a second
/// session of the same configuration whose delegate follows no redirect at all, so a secret in a
/// request body is never sent anywhere but where it was addressed.
public final class URLSessionTransport: HTTPTransport {
    /// One transport shared by every resource that does not name its own.
    public static let shared = URLSessionTransport()

    private let session: URLSession
    private let nonRedirectingSession: URLSession

    /// Creates a transport with its own sessions.
    /// - Parameter configuration: the sessions' configuration; ``defaultConfiguration()`` unless
    ///   given: no cookies and no cache.
    public init(configuration: URLSessionConfiguration = URLSessionTransport.defaultConfiguration()) {
        session = URLSession(
            configuration: configuration,
            delegate: CrossOriginRedirectGuard(followsRedirects: true),
            delegateQueue: nil
        )
        nonRedirectingSession = URLSession(
            configuration: configuration,
            delegate: CrossOriginRedirectGuard(followsRedirects: false),
            delegateQueue: nil
        )
    }

    /// Creates a transport for an app's own `session` (a proxy, a custom configuration, a
    /// certificate-pinning delegate).
    ///
    /// A session's delegate is fixed when it is made, and on Linux only a session-level delegate
    /// sees redirects, so the transport cannot add its redirect rule to `session` itself. It
    /// sends through two sessions made like it instead: the same configuration and delegate
    /// queue, and a delegate that applies the redirect rule (credentials stay on their origin;
    /// no redirect at all for secrets in a body) and hands every authentication challenge, such
    /// as a server trust check that pins a certificate, to `session`'s own delegate.
    public init(session: URLSession) {
        let original = session.delegate
        self.session = URLSession(
            configuration: session.configuration,
            delegate: CrossOriginRedirectGuard(followsRedirects: true, forwardingTo: original),
            delegateQueue: session.delegateQueue
        )
        nonRedirectingSession = URLSession(
            configuration: session.configuration,
            delegate: CrossOriginRedirectGuard(followsRedirects: false, forwardingTo: original),
            delegateQueue: session.delegateQueue
        )
    }

    /// The configuration of a transport made without one: ephemeral, with no cookie store (no
    /// cookie is sent or kept, so the shared store's cookies never ride on a token, discovery or
    /// registration request) and no response cache (a token reply, or a resource's, is never
    /// written anywhere). An app that wants either hands in a session or configuration that has it.
    public static func defaultConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return configuration
    }

    deinit {
        session.finishTasksAndInvalidate()
        nonRedirectingSession.finishTasksAndInvalidate()
    }

    /// Sends `request` through the session, following redirects (credentials stay on their origin).
    public func send(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        try await Self.send(request, through: session)
    }

    /// Sends `request` under `options`: without redirects when they are not allowed, cancelled
    /// when the total deadline passes, and rejected when the body is over the cap.
    public func send(_ request: URLRequest, options: HTTPTransportOptions) async throws -> (Data, ResponseHead) {
        let session = options.followsRedirects ? self.session : nonRedirectingSession
        let (body, response) = try await withDeadline(options.timeout, for: request) {
            try await Self.send(request, through: session)
        }
        try options.check(body, of: response, for: request)
        return (body, response)
    }

    private static func send(_ request: URLRequest, through session: URLSession) async throws -> (
        Data, ResponseHead
    ) {
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch let error as URLError where error.code == .cancelled && Task.isCancelled {
            // URLSession reports task cancellation as URLError(.cancelled); callers expect
            // the structured-concurrency error.
            throw CancellationError()
        } catch {
            // One typed class per failure (refused, lost, timed out, TLS, DNS), as on every transport.
            throw HTTPTransportError.classifying(error, sending: request)
        }
        guard let httpResponse = response as? HTTPURLResponse else {
            throw HTTPTransportError(.failed, sending: request, underlyingError: URLError(.badServerResponse))
        }
        return (data, ResponseHead(httpResponse))
    }
}

/// The redirect rule of ``URLSessionTransport``, as its sessions' delegate: credentials stay on
/// the origin of the original request, or, for requests that carry a secret in their body, no
/// redirect is followed at all (the `3xx` reply itself becomes the response). For sessions made
/// like an app's own, authentication challenges go to the app's delegate.
///
/// `@unchecked Sendable`: its stored properties are immutable after `init`; the forwarded delegate
/// is the app's, which `URLSession` already calls from its own queue, as it would without us.
package final class CrossOriginRedirectGuard: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    private let followsRedirects: Bool
    private let original: (any URLSessionDelegate)?

    init(followsRedirects: Bool, forwardingTo original: (any URLSessionDelegate)? = nil) {
        self.followsRedirects = followsRedirects
        self.original = original
    }

    package func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard followsRedirects else { return completionHandler(nil) }
        completionHandler(Self.redirect(request, from: task.originalRequest?.url))
    }

    /// The request to follow: `request` itself on the same origin, otherwise a copy without
    /// the headers that carry credentials. A redirect from `https` to plain `http` is another
    /// origin, so it never carries them.
    package static func redirect(_ request: URLRequest, from originalURL: URL?) -> URLRequest {
        guard let originalURL, let target = request.url, let origin = Origin(originalURL), origin == Origin(target)
        else {
            return request.removingCredentialHeaders()
        }
        return request
    }

    package func urlSession(
        _ session: URLSession,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let original else { return completionHandler(.performDefaultHandling, nil) }
        #if canImport(FoundationNetworking)
            original.urlSession(session, didReceive: challenge, completionHandler: completionHandler)
        #else
            // On Apple platforms the method is an optional Objective-C requirement.
            guard original.urlSession?(session, didReceive: challenge, completionHandler: completionHandler) != nil
            else { return completionHandler(.performDefaultHandling, nil) }
        #endif
    }

    package func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let original = original as? any URLSessionTaskDelegate else {
            return completionHandler(.performDefaultHandling, nil)
        }
        #if canImport(FoundationNetworking)
            original.urlSession(session, task: task, didReceive: challenge, completionHandler: completionHandler)
        #else
            guard
                original.urlSession?(session, task: task, didReceive: challenge, completionHandler: completionHandler)
                    != nil
            else { return completionHandler(.performDefaultHandling, nil) }
        #endif
    }
}
