#if OpenAPI
    import AuthenticatedRequests
    import Foundation
    import HTTPTypes
    import OpenAPIRuntime

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// A swift-openapi-runtime `ClientTransport` that sends through an
    /// `HTTPTransport`, so a generated client uses the same transport as
    /// the authenticator (one `AsyncHTTPClientTransport` or `URLSessionTransport` for tokens,
    /// discovery and API calls).
    ///
    /// ```swift
    /// let client = Client(
    ///     serverURL: try Servers.Server1.url(),
    ///     transport: HTTPTransportClient(authenticator.transport),
    ///     middlewares: [AuthenticationMiddleware(authenticator: authenticator)])
    /// ```
    ///
    /// Request bodies are collected before sending, up to ``maximumBodySize`` bytes;
    /// responses arrive whole, as `HTTPTransport` delivers them.
    public struct HTTPTransportClient: ClientTransport {
        /// The transport that sends the requests.
        public let transport: any HTTPTransport
        /// The largest request body, in bytes, that is sent.
        public let maximumBodySize: Int

        /// Creates a client transport over `transport`.
        ///
        /// - Parameters:
        ///   - transport: The transport that sends the requests.
        ///   - maximumBodySize: The largest request body to send, in bytes; the default is 16 MiB.
        public init(_ transport: any HTTPTransport, maximumBodySize: Int = 16 * 1024 * 1024) {
            self.transport = transport
            self.maximumBodySize = maximumBodySize
        }

        /// Sends `request` with `body` to `baseURL` + the request's path.
        public func send(
            _ request: HTTPRequest,
            body: HTTPBody?,
            baseURL: URL,
            operationID: String
        ) async throws -> (HTTPResponse, HTTPBody?) {
            var urlRequest = try URLRequest(request, baseURL: baseURL)
            if let body {
                urlRequest.httpBody = try await Data(collecting: body, upTo: maximumBodySize)
            }
            let (data, response) = try await transport.send(urlRequest)
            return (HTTPResponse(response), data.isEmpty ? nil : HTTPBody(data))
        }
    }
#endif
