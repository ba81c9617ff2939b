#if MCP
    import AuthenticatedRequests
    import Foundation

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The loader behind ``MCPAuthorizer/sessionConfiguration()``: every request of the MCP Swift
    /// SDK's `HTTPClientTransport` goes through it, and it sends it through a session of its own
    /// whose delegate decides each redirect. The SDK makes its `URLSession` from a configuration
    /// alone, without a delegate, so a redirect rule can only be added this way.
    ///
    /// - A redirect of a request that carries a credential (`Authorization`, `DPoP`) to a URL
    ///   outside the resource it was sent to (another origin, or a path outside the MCP endpoint's,
    ///   compared as the server reads it: `ResourceBoundary`) is refused: nothing is sent there,
    ///   and the request fails with `AuthenticationError` `foreignResource`.
    /// - Any other redirect (inside the resource, or a request without a credential) is followed.
    /// - A `401` with a `WWW-Authenticate: Basic` challenge is passed on as it is: the MCP layer
    ///   answers it, not `URLSession` (on Linux, whose default handling waits for ever).
    /// - The response is passed on as it arrives (streamed bodies stream), with no cookie and no
    ///   cache.
    ///
    /// Not `Sendable` (Foundation makes `URLProtocol` explicitly not so): `URLSession` drives it
    /// from its own queue, and what crosses to other queues is a ``Handle``.
    final class OriginBoundURLProtocol: URLProtocol {
        /// The inner session: the transport's configuration (no cookies, no cache) without this
        /// protocol, so its requests go to the network.
        private static let session = URLSession(
            configuration: URLSessionTransport.defaultConfiguration(), delegate: RedirectDecider.shared,
            delegateQueue: nil)

        /// The state shared with the inner session's delegate.
        private let load = Load()

        override class func canInit(with request: URLRequest) -> Bool {
            guard let scheme = request.url?.scheme?.lowercased() else { return false }
            return scheme == "http" || scheme == "https"
        }

        override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

        override func startLoading() {
            let request = self.request
            let handle = Handle(loader: self, load: load)
            // Off URLSession's own queue: on Linux, a task of another session started on it
            // deadlocks (swift-corelibs-foundation's sessions share their work queue's target).
            DispatchQueue.global().async {
                let started = Self.session.dataTask(with: request)
                handle.load.task.withLock { $0 = started }
                RedirectDecider.shared.register(handle, for: started)
                started.resume()
            }
        }

        override func stopLoading() {
            load.ended.withLock { $0 = true }
            if let task = load.task.withLock({ $0 }) {
                RedirectDecider.shared.unregister(task)
                // Off URLSession's own queue, as in `startLoading`: on Linux, cancelling a task of
                // another session from it waits for a queue the thread already holds, and
                // libdispatch stops the process (seen when an MCP client disconnected with a
                // request in flight). Nothing is delivered after `ended`, so the order is free.
                DispatchQueue.global().async { task.cancel() }
            }
        }

        /// What one load holds across queues.
        final class Load: Sendable {
            /// What the loader hands to its client, in order, off `URLSession`'s queues.
            let deliveries = DispatchQueue(label: "OriginBoundURLProtocol.deliveries")
            let task = Locked<URLSessionDataTask?>(nil)
            /// Set once the load ended (finished, failed, refused, stopped): later events are dropped.
            let ended = Locked(false)
        }

        /// The loader and its state, for the inner session's delegate and the delivery queue.
        ///
        /// `@unchecked Sendable`: the loader is used only to reach its `client`, on the load's
        /// serial delivery queue, one event after another, as `URLProtocol`'s contract allows (its
        /// client may be called from any thread); everything else is in `load`, which is `Sendable`.
        struct Handle: @unchecked Sendable {
            let loader: OriginBoundURLProtocol
            let load: Load

            func received(_ response: URLResponse) {
                deliver { client, loader in
                    client.urlProtocol(loader, didReceive: response, cacheStoragePolicy: .notAllowed)
                }
            }

            func received(_ data: Data) {
                deliver { client, loader in client.urlProtocol(loader, didLoad: data) }
            }

            func finished(with error: (any Error)?) {
                deliver(ending: true) { client, loader in
                    if let error {
                        client.urlProtocol(loader, didFailWithError: error)
                    } else {
                        client.urlProtocolDidFinishLoading(loader)
                    }
                }
            }

            private func deliver(ending: Bool = false, _ event: @escaping (any URLProtocolClient, URLProtocol) -> Void)
            {
                let handle = self
                let event = UncheckedEvent(run: event)
                load.deliveries.async {
                    let wasEnded = handle.load.ended.withLock { ended in
                        defer { if ending { ended = true } }
                        return ended
                    }
                    guard !wasEnded, let client = handle.loader.client else { return }
                    event.run(client, handle.loader)
                }
            }
        }

        /// An event for the client, carried to the delivery queue.
        ///
        /// `@unchecked Sendable`: it captures only a response or data (values `URLSession` hands
        /// over and never touches again) and runs once, on the load's serial queue.
        private struct UncheckedEvent: @unchecked Sendable {
            let run: (any URLProtocolClient, URLProtocol) -> Void
        }
    }

    /// The inner session's delegate: decides redirects and routes each task's events to its loader.
    ///
    /// `@unchecked Sendable`: its one mutable property is behind a lock (`Locked`).
    private final class RedirectDecider: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        static let shared = RedirectDecider()
        private let loaders = Locked<[Int: OriginBoundURLProtocol.Handle]>([:])

        func register(_ handle: OriginBoundURLProtocol.Handle, for task: URLSessionTask) {
            loaders.withLock { $0[task.taskIdentifier] = handle }
        }

        func unregister(_ task: URLSessionTask) {
            _ = loaders.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        }

        private func loader(of task: URLSessionTask) -> OriginBoundURLProtocol.Handle? {
            loaders.withLock { $0[task.taskIdentifier] }
        }

        func urlSession(
            _ session: URLSession,
            task: URLSessionTask,
            willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest,
            completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            let original = task.originalRequest
            let carriesCredential = ["Authorization", "DPoP"].contains {
                original?.value(forHTTPHeaderField: $0) != nil
            }
            // The MCP transport sends only to its endpoint, the resource its token was issued for:
            // a credential follows a redirect only inside that resource (its origin, its path and
            // below, as the server reads the path).
            let inside = original?.url.map { ResourceBoundary($0) }.map { boundary in
                request.url.map(boundary.contains) ?? false
            }
            guard carriesCredential, inside != true else { return completionHandler(request) }
            completionHandler(nil)
            let from = original?.url?.redactedForDisplay ?? "the MCP server"
            let target = request.url?.redactedForDisplay ?? "another URL"
            loader(of: task)?.finished(
                with: AuthenticationError(
                    code: .foreignResource,
                    message: "\(from) redirected a request that carries its credential to \(target), outside "
                        + "the MCP server's resource (status \(response.statusCode)); the redirect was refused and "
                        + "nothing was sent there."))
            unregister(task)
            task.cancel()
        }

        func urlSession(
            _ session: URLSession,
            dataTask: URLSessionDataTask,
            didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            loader(of: dataTask)?.received(response)
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            loader(of: dataTask)?.received(data)
        }

        /// The tasks whose `401` challenge was declined: their response and body are already passed on.
        private let challenged = Locked<Set<Int>>([])

        /// Declines an HTTP authentication challenge (a `401` with `WWW-Authenticate: Basic`), so
        /// the `401` and its body reach the MCP layer, which answers it. Server
        /// trust and client certificate challenges get `URLSession`'s default handling.
        func urlSession(
            _ session: URLSession,
            task: URLSessionTask,
            didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            guard challenge.failureResponse != nil else { return completionHandler(.performDefaultHandling, nil) }
            #if canImport(FoundationNetworking)
                // swift-corelibs-foundation raises it after the whole reply was delivered, and before
                // 6.3.2 its default handling never completes the task (issue 5456).
                challenged.withLock { _ = $0.insert(task.taskIdentifier) }
                completionHandler(.cancelAuthenticationChallenge, nil)
            #else
                // Apple's raises it before the reply: rejecting it delivers the 401, with no
                // credential from any store.
                completionHandler(.rejectProtectionSpace, nil)
            #endif
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let declined = challenged.withLock { $0.remove(task.taskIdentifier) != nil }
            loader(of: task)?.finished(with: declined ? nil : error)
            unregister(task)
        }
    }
#endif
