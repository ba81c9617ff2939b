import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(CryptoKit) && canImport(Security)
    import CryptoKit
    import Security
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
    /// The `x5t#S256` of the client certificate the sessions present, if any.
    private let thumbprint: String?

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
        thumbprint = nil
    }

    /// Creates a transport that presents `clientIdentity` when a server asks for a client
    /// certificate (mutual TLS, RFC 8705), through the sessions' client-certificate challenge.
    ///
    /// Only Apple platforms can: give an identity made with
    /// `ClientIdentity(secIdentity:)` (from the Keychain or a PKCS #12 file). On Linux,
    /// `URLSession` (swift-corelibs-foundation) has no way to present a client certificate:
    /// use `AsyncHTTPClientTransport(clientIdentity:)` (package trait `AsyncHTTPClient`), which
    /// also reads PEM files and follows their rotation.
    ///
    /// - Throws: ``ClientIdentityError`` `.unsupportedByTransport` on Linux, and on Apple
    ///   platforms for an identity that is not a `SecIdentity`; nothing is ever sent without
    ///   the certificate.
    public init(
        configuration: URLSessionConfiguration = URLSessionTransport.defaultConfiguration(),
        clientIdentity: ClientIdentity
    ) throws {
        #if canImport(FoundationNetworking) || !canImport(CryptoKit)
            throw ClientIdentityError(
                .unsupportedByTransport,
                "URLSession on Linux cannot present a client certificate, so URLSessionTransport refuses "
                    + "\(clientIdentity): use AsyncHTTPClientTransport(clientIdentity:) (package trait "
                    + "AsyncHTTPClient) for mutual TLS.")
        #else
            guard let identity = clientIdentity.secIdentity else {
                throw ClientIdentityError(
                    .unsupportedByTransport,
                    "URLSession presents a SecIdentity, not PEM files (\(clientIdentity)): import the certificate "
                        + "and key into the Keychain or a PKCS #12 file and use ClientIdentity(secIdentity:), or use "
                        + "AsyncHTTPClientTransport(clientIdentity:).")
            }
            var certificate: SecCertificate?
            guard SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess, let certificate else {
                throw ClientIdentityError(.rejectedByTLS, "The SecIdentity has no certificate.")
            }
            let der = SecCertificateCopyData(certificate) as Data
            thumbprint = Base64URL.encode(Data(SHA256.hash(data: der)))
            let credential = URLCredential(identity: identity, certificates: nil, persistence: .forSession)
            session = URLSession(
                configuration: configuration,
                delegate: CrossOriginRedirectGuard(followsRedirects: true, clientCredential: credential),
                delegateQueue: nil
            )
            nonRedirectingSession = URLSession(
                configuration: configuration,
                delegate: CrossOriginRedirectGuard(followsRedirects: false, clientCredential: credential),
                delegateQueue: nil
            )
        #endif
    }

    /// The `x5t#S256` of the client certificate this transport presents; `nil` without one.
    public func clientCertificateThumbprint() throws -> String? { thumbprint }

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
        thumbprint = nil
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
            #if canImport(FoundationNetworking)
                if let loader = session.delegate as? CrossOriginRedirectGuard {
                    (data, response) = try await loader.load(request, in: session)
                } else {
                    (data, response) = try await session.data(for: request)
                }
            #else
                (data, response) = try await session.data(for: request)
            #endif
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
/// On Linux it also loads each request itself (``load(_:in:)``): swift-corelibs-foundation
/// raises an authentication challenge for a `401` whose `WWW-Authenticate` names `Basic` (as
/// RFC 6749 §5.2 asks token endpoints to send), and before 6.3.2 its default handling never
/// completes the task (swift-corelibs-foundation issue 5456): the request hung until its deadline.
/// The guard collects the reply as it arrives, declines such a challenge, and returns the `401`
/// with its body at once, so the engine reads the server's `error` and `error_description`.
///
/// `@unchecked Sendable`: its stored properties are immutable after `init` or behind a lock
/// (`Locked`); the forwarded delegate is the app's, which `URLSession` already calls from its own
/// queue, as it would without us.
package final class CrossOriginRedirectGuard: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let followsRedirects: Bool
    private let original: (any URLSessionDelegate)?
    /// The answer to a server's client-certificate challenge (Apple platforms), if any.
    private let clientCredential: URLCredential?

    /// A request being loaded by ``load(_:in:)``: what arrived so far and who waits for it.
    private struct Loading {
        var continuation: CheckedContinuation<(Data, URLResponse), any Error>
        var response: URLResponse?
        var data = Data()
        var declinedChallenge = false
    }

    /// The loads in flight, by task identifier.
    private let loads = Locked<[Int: Loading]>([:])

    /// Loads `request` as a task of `session` (whose delegate this is), collecting its reply here.
    /// Cancelling the calling task cancels the request.
    func load(_ request: URLRequest, in session: URLSession) async throws -> (Data, URLResponse) {
        let task = session.dataTask(with: request)
        let identifier = task.taskIdentifier
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                loads.withLock { $0[identifier] = Loading(continuation: continuation) }
                task.resume()
                // Cancelled before the task was registered: the handler's cancel found nothing to stop.
                if Task.isCancelled { task.cancel() }
            }
        } onCancel: {
            task.cancel()
        }
    }

    package func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        loads.withLock { loads in
            guard loads[dataTask.taskIdentifier] != nil else { return }
            loads[dataTask.taskIdentifier]?.response = response
            loads[dataTask.taskIdentifier]?.data = Data()
        }
        completionHandler(.allow)
    }

    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        loads.withLock { loads in
            guard loads[dataTask.taskIdentifier] != nil else { return }
            loads[dataTask.taskIdentifier]?.data.append(data)
        }
    }

    package func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let loading = loads.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error, !loading.declinedChallenge {
            return loading.continuation.resume(throwing: error)
        }
        guard let response = loading.response ?? task.response else {
            return loading.continuation.resume(throwing: error ?? URLError(.badServerResponse))
        }
        loading.continuation.resume(returning: (loading.data, response))
    }

    /// Whether the transport answers `challenge` itself: an HTTP `401` challenge to a request
    /// ``load(_:in:)`` is collecting, which it declines after recording that the reply is whole.
    private func declines(_ challenge: URLAuthenticationChallenge, for task: URLSessionTask) -> Bool {
        guard challenge.failureResponse != nil else { return false }
        return loads.withLock { loads in
            guard loads[task.taskIdentifier] != nil else { return false }
            loads[task.taskIdentifier]?.declinedChallenge = true
            return true
        }
    }

    init(
        followsRedirects: Bool, forwardingTo original: (any URLSessionDelegate)? = nil,
        clientCredential: URLCredential? = nil
    ) {
        self.followsRedirects = followsRedirects
        self.original = original
        self.clientCredential = clientCredential
    }

    /// The client certificate for a server that asks for one, when this transport has one.
    /// Never on Linux, whose `URLSession` has no client-certificate challenge.
    private func clientCertificate(for challenge: URLAuthenticationChallenge) -> URLCredential? {
        #if canImport(FoundationNetworking)
            return nil
        #else
            guard let clientCredential,
                challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodClientCertificate
            else { return nil }
            return clientCredential
        #endif
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
        if let credential = clientCertificate(for: challenge) { return completionHandler(.useCredential, credential) }
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
        if declines(challenge, for: task) { return completionHandler(.cancelAuthenticationChallenge, nil) }
        if let credential = clientCertificate(for: challenge) { return completionHandler(.useCredential, credential) }
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
