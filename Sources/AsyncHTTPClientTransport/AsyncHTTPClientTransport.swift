#if AsyncHTTPClient
    import AsyncHTTPClient
    import AuthenticatedRequests
    import Foundation
    import NIOCore
    import NIOHTTP1

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// An ``AuthenticatedRequests/HTTPTransport`` on swift-server/async-http-client, for servers:
    /// SwiftNIO's event loops instead of `URLSession`, with connection pooling and HTTP/2.
    ///
    /// Enable the package trait `AsyncHTTPClient` to build it:
    ///
    /// ```swift
    /// .package(url: "…/AuthenticatedRequests", from: "1.0.0", traits: ["AsyncHTTPClient"])
    /// ```
    ///
    /// Redirects are followed by AsyncHTTPClient, which drops `Authorization`,
    /// `Proxy-Authorization` and `Cookie` when a redirect leaves the origin of the request: a
    /// token goes only to the origin it was applied to (the tests check it).
    public struct AsyncHTTPClientTransport: HTTPTransport {
        /// The client that sends the requests.
        public let client: HTTPClient
        /// How long one request may take, redirects included.
        public let timeout: TimeAmount
        /// The largest response body accepted, in bytes.
        public let maximumBodySize: Int

        /// Creates a transport on `client` (the process-wide `HTTPClient.shared` by default,
        /// which needs no shutdown).
        public init(client: HTTPClient = .shared, timeout: TimeAmount = .seconds(60), maximumBodySize: Int = 16 << 20) {
            self.client = client
            self.timeout = timeout
            self.maximumBodySize = maximumBodySize
        }

        /// Sends `request` and collects its body.
        public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            guard let url = request.url else { throw URLError(.badURL) }
            var outgoing = HTTPClientRequest(url: url.absoluteString)
            outgoing.method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
            for (name, value) in request.allHTTPHeaderFields ?? [:] {
                outgoing.headers.add(name: name, value: value)
            }
            if let body = request.httpBody {
                outgoing.body = .bytes(ByteBuffer(bytes: body))
            }
            let response = try await client.execute(outgoing, timeout: timeout)
            let buffer = try await response.body.collect(upTo: maximumBodySize)
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
