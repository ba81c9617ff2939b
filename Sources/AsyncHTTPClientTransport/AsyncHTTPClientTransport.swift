#if AsyncHTTPClient
    import AsyncHTTPClient
    import AuthenticatedRequests
    import Foundation
    import NIOCore
    import NIOHTTP1

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// An `HTTPTransport` on swift-server/async-http-client, for servers:
    /// SwiftNIO's event loops instead of `URLSession`, with connection pooling and HTTP/2.
    ///
    /// Enable the package trait `AsyncHTTPClient` to build it:
    ///
    /// ```swift
    /// .package(url: "…/AuthenticatedRequests", from: "1.0.0", traits: ["AsyncHTTPClient"])
    /// ```
    ///
    /// Redirects of ordinary requests are followed by `client`, which drops `Authorization`,
    /// `Proxy-Authorization` and `Cookie` when a redirect leaves the origin of the request: a
    /// token goes only to the origin it was applied to (the tests check it).
    ///
    /// Requests that must not follow redirects (those to an authorization server, which carry a
    /// secret in their body) go through ``nonRedirectingClient`` instead, a client configured
    /// with `redirectConfiguration: .disallow`: AsyncHTTPClient chooses redirects per client, not
    /// per request. Its deadline covers the whole body, not only the response head.
    public struct AsyncHTTPClientTransport: HTTPTransport {
        /// The client that sends ordinary requests.
        public let client: HTTPClient
        /// The client for requests that must not follow redirects; it must be configured with
        /// `redirectConfiguration: .disallow`.
        public let nonRedirectingClient: HTTPClient
        /// How long one ordinary request may take, redirects and body included.
        public let timeout: TimeAmount
        /// The largest response body accepted, in bytes.
        public let maximumBodySize: Int

        /// A process-wide client that follows no redirect, on the same event loops as
        /// `HTTPClient.shared`; like it, it lives as long as the process and needs no shutdown.
        public static let sharedNonRedirectingClient: HTTPClient = {
            var configuration = HTTPClient.Configuration()
            configuration.redirectConfiguration = .disallow
            return HTTPClient(
                eventLoopGroup: HTTPClient.defaultEventLoopGroup,
                configuration: configuration
            )
        }()

        /// Creates a transport.
        ///
        /// - Parameters:
        ///   - client: the client for ordinary requests; the process-wide `HTTPClient.shared`
        ///     by default, which needs no shutdown.
        ///   - nonRedirectingClient: the client for requests that must not follow redirects;
        ///     ``sharedNonRedirectingClient`` by default. Pass your own (with
        ///     `redirectConfiguration: .disallow`) when `client` has settings such as a proxy or
        ///     TLS configuration that the authorization server needs too.
        ///   - timeout: the total deadline of an ordinary request.
        ///   - maximumBodySize: the largest body accepted.
        public init(
            client: HTTPClient = .shared,
            nonRedirectingClient: HTTPClient = AsyncHTTPClientTransport.sharedNonRedirectingClient,
            timeout: TimeAmount = .seconds(60),
            maximumBodySize: Int = 16 << 20
        ) {
            self.client = client
            self.nonRedirectingClient = nonRedirectingClient
            self.timeout = timeout
            self.maximumBodySize = maximumBodySize
        }

        /// Sends `request` and collects its body, within ``timeout``.
        public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            let seconds = Double(timeout.nanoseconds) / 1e9
            return try await send(request, options: HTTPTransportOptions(timeout: seconds))
        }

        /// Sends `request` under `options`: through ``nonRedirectingClient`` when redirects are
        /// not allowed, with the deadline covering the whole body, and the body capped.
        public func send(_ request: URLRequest, options: HTTPTransportOptions) async throws -> (
            Data, HTTPURLResponse
        ) {
            let client = options.followsRedirects ? self.client : nonRedirectingClient
            let limit = min(options.maximumResponseSize ?? maximumBodySize, maximumBodySize)
            let (body, response) = try await withDeadline(options.timeout, for: request) {
                try await Self.execute(request, on: client, maximumBodySize: limit)
            }
            try options.check(body, of: response, for: request)
            return (body, response)
        }

        private static func execute(
            _ request: URLRequest,
            on client: HTTPClient,
            maximumBodySize: Int
        ) async throws -> (Data, HTTPURLResponse) {
            guard let url = request.url else { throw URLError(.badURL) }
            var outgoing = HTTPClientRequest(url: url.absoluteString)
            outgoing.method = NIOHTTP1.HTTPMethod(rawValue: request.httpMethod ?? "GET")
            for (name, value) in request.allHTTPHeaderFields ?? [:] {
                outgoing.headers.add(name: name, value: value)
            }
            if let body = request.httpBody {
                outgoing.body = .bytes(ByteBuffer(bytes: body))
            }
            // The total deadline is enforced around this call; this one only stops a client
            // that would otherwise wait for ever.
            let response = try await client.execute(outgoing, timeout: .hours(1))
            let buffer: ByteBuffer
            do {
                buffer = try await response.body.collect(upTo: maximumBodySize)
            } catch is NIOTooManyBytesError {
                throw HTTPTransportError.responseTooLarge(limit: maximumBodySize, url: url)
            }
            var headers: [String: String] = [:]
            for (name, value) in response.headers {
                headers[name] = headers[name].map { "\($0), \(value)" } ?? value
            }
            guard
                let httpResponse = HTTPURLResponse(
                    url: response.url ?? url,
                    statusCode: Int(response.status.code),
                    httpVersion: "HTTP/\(response.version.major).\(response.version.minor)",
                    headerFields: headers
                )
            else {
                throw URLError(.badServerResponse)
            }
            return (Data(buffer.readableBytesView), httpResponse)
        }
    }
#endif
