#if OpenAPI
    import AuthenticatedRequests
    import Foundation
    import HTTPTypes
    import OpenAPIRuntime

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// A swift-openapi-runtime `ClientMiddleware` that authenticates every call of a generated
    /// client through an `AuthenticationInterceptor`: the same engine,
    /// store and refresh coordination as `request(using:)`, not a copy of them.
    ///
    /// ```swift
    /// let client = Client(
    ///     serverURL: try Servers.Server1.url(),
    ///     transport: HTTPTransportClient(authenticator.transport),  // or any ClientTransport
    ///     middlewares: [AuthenticationMiddleware(authenticator: authenticator)])
    /// let profile = try await client.getProfile()
    /// ```
    ///
    /// For each call it:
    /// 1. applies a valid credential, refreshing it ahead of expiry (or obtaining the first one)
    ///    with every concurrent call sharing one refresh;
    /// 2. sends the call through the rest of the chain;
    /// 3. when the authenticator classifies the response as a rejected credential (status 401 by
    ///    default), refreshes once, shared with every other call rejected at the same time, and
    ///    sends the call once more with the new credential. A second rejection is the answer.
    ///
    /// A retry needs the request body twice. Bodies that can be iterated more than once (the
    /// generated client's JSON bodies) are reused as they are; a single-pass body of known length
    /// up to ``maximumBufferedBodySize`` is buffered first. A single-pass body of unknown or
    /// larger length is sent once: when it is rejected, the credential is still refreshed, so
    /// the next call carries the new one, and the 401 is returned to the caller.
    ///
    /// Enable the package trait `OpenAPI` to build it:
    ///
    /// ```swift
    /// .package(url: "https://github.com/OWNER/AuthenticatedRequests.git", branch: "main", traits: ["OpenAPI"])
    /// ```
    public struct AuthenticationMiddleware<A: Authenticator>: ClientMiddleware {
        /// The authenticator whose credential the calls carry.
        public let authenticator: AuthenticationInterceptor<A>
        /// The largest single-pass request body, in bytes, that is buffered so that a rejected
        /// call can be retried.
        public let maximumBufferedBodySize: Int

        /// Creates a middleware that authenticates calls with `authenticator`'s credential.
        ///
        /// - Parameters:
        ///   - authenticator: The authenticator that owns the credential.
        ///   - maximumBufferedBodySize: The largest single-pass body, in bytes, to buffer for a
        ///     retry. The default is 2 MiB.
        public init(authenticator: AuthenticationInterceptor<A>, maximumBufferedBodySize: Int = 2 * 1024 * 1024) {
            self.authenticator = authenticator
            self.maximumBufferedBodySize = max(0, maximumBufferedBodySize)
        }

        /// Authenticates `request`, sends it through `next`, and retries it once after a
        /// rejected credential.
        public func intercept(
            _ request: HTTPRequest,
            body: HTTPBody?,
            baseURL: URL,
            operationID: String,
            next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
        ) async throws -> (HTTPResponse, HTTPBody?) {
            let original = try URLRequest(request, baseURL: baseURL)
            var authenticated = original
            try await authenticator.authenticate(&authenticated)
            let (body, isReplayable) = try await replayable(body)

            var (response, responseBody) = try await next(
                request.applying(headersOf: authenticated, comparedWith: original),
                body,
                baseURL
            )
            guard let url = authenticated.url else { return (response, responseBody) }
            var head = ResponseHead(response, url: url)
            // A DPoP server that asks for its nonce gets the call once more (not a refresh).
            if let resend = try await authenticator.resendableRequest(authenticated, after: head),
                isReplayable
            {
                authenticated = resend
                (response, responseBody) = try await next(
                    request.applying(headersOf: authenticated, comparedWith: original), body, baseURL)
                head = ResponseHead(response, url: url)
                _ = try await authenticator.resendableRequest(authenticated, after: head)
            }
            guard authenticator.isRejection(head, of: authenticated) else {
                return (response, responseBody)
            }
            guard isReplayable else {
                // The body is spent: refresh for the calls that follow, and return the rejection.
                _ = try? await authenticator.reauthenticate(afterRejectionOf: authenticated)
                return (response, responseBody)
            }
            let retry = try await authenticator.reauthenticate(afterRejectionOf: authenticated)
            return try await next(request.applying(headersOf: retry, comparedWith: original), body, baseURL)
        }

        /// `body`, made safe to send twice when that costs at most ``maximumBufferedBodySize``
        /// bytes, and whether it is.
        private func replayable(_ body: HTTPBody?) async throws -> (HTTPBody?, Bool) {
            guard let body else { return (nil, true) }
            if body.iterationBehavior == .multiple { return (body, true) }
            guard case .known(let length) = body.length, length <= maximumBufferedBodySize else {
                return (body, false)
            }
            let bytes = try await ArraySlice<UInt8>(collecting: body, upTo: maximumBufferedBodySize)
            return (HTTPBody(bytes, length: .known(Int64(bytes.count))), true)
        }
    }
#endif
