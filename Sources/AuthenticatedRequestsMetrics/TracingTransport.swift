#if Metrics
    import AuthenticatedRequests
    import Foundation
    import Tracing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// An `HTTPTransport` that wraps every request of another one in a swift-distributed-tracing
    /// span: give it to a flow to trace its token requests, or to the authenticator's client to
    /// trace every request.
    ///
    /// ```swift
    /// let transport = TracingTransport(URLSessionTransport())
    /// ```
    ///
    /// Each span is named `HTTP <method>` and carries the method, the server's host and port, the
    /// URL's path and the response's status code: never the query (it can hold a code or a
    /// state), a header or a body. A failure sets the span's status to the error's type, without
    /// its description. A no-op until the application bootstraps a tracer
    /// (`InstrumentationSystem.bootstrap`). Enable the package trait `Metrics`.
    public struct TracingTransport: HTTPTransport {
        /// The transport that sends the requests.
        public let base: any HTTPTransport

        /// Wraps `base`.
        public init(_ base: any HTTPTransport) {
            self.base = base
        }

        /// Sends `request` through ``base`` in a span.
        public func send(_ request: URLRequest) async throws -> (Data, ResponseHead) {
            try await traced(request) { try await base.send(request) }
        }

        /// Sends `request` through ``base`` under `options`, in a span.
        public func send(_ request: URLRequest, options: HTTPTransportOptions) async throws -> (Data, ResponseHead) {
            try await traced(request) { try await base.send(request, options: options) }
        }

        /// The client certificate ``base`` presents.
        public func clientCertificateThumbprint() throws -> String? { try base.clientCertificateThumbprint() }

        private func traced(
            _ request: URLRequest, _ send: () async throws -> (Data, ResponseHead)
        ) async throws -> (Data, ResponseHead) {
            let method = request.httpMethod ?? "GET"
            let span = startSpan("HTTP \(Self.knownMethods.contains(method) ? method : "other")", ofKind: .client)
            defer { span.end() }
            span.attributes["http.request.method"] = method
            if let url = request.url {
                if let host = url.host { span.attributes["server.address"] = host }
                if let port = url.port { span.attributes["server.port"] = port }
                span.attributes["url.path"] = url.path
            }
            do {
                let (body, head) = try await send()
                span.attributes["http.response.status_code"] = head.statusCode
                if head.statusCode >= 400 { span.setStatus(SpanStatus(code: .error)) }
                return (body, head)
            } catch {
                let type = String(describing: Swift.type(of: error))
                span.attributes["error.type"] = type
                span.setStatus(SpanStatus(code: .error, message: type))
                throw error
            }
        }

        private static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    }
#endif
