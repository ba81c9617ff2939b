import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport that answers from a closure, without touching the network: the test double for
/// everything in this package.
///
/// Write one by handling the requests your test expects and failing the rest:
///
/// ```swift
/// let transport = InMemoryTransport { request in
///     switch request.url?.path {
///     case "/me":
///         return try InMemoryTransport.reply(to: request, json: #"{"name":"Ada"}"#)
///     default:
///         return try InMemoryTransport.reply(to: request, status: 404)
///     }
/// }
/// let me = try await Me(transport: transport).request()
/// ```
///
/// The closure may be `async` (to suspend like a slow server) and may throw (to act like a
/// failing network, e.g. `throw URLError(.notConnectedToInternet)`).
public struct InMemoryTransport: HTTPTransport {
    /// Produces the reply to one request.
    public typealias Handler = @Sendable (URLRequest) async throws -> (Data, ResponseHead)

    private let handler: Handler
    private let thumbprint: (@Sendable () throws -> String?)?

    /// Creates a transport that answers every request with `handler`.
    ///
    /// - Parameters:
    ///   - clientCertificateThumbprint: what ``clientCertificateThumbprint()`` answers, asked at
    ///     each call (a test rotates the certificate by answering another); `nil` for a transport
    ///     that presents no client certificate.
    ///   - handler: the replies.
    public init(
        clientCertificateThumbprint: (@Sendable () throws -> String?)? = nil, _ handler: @escaping Handler
    ) {
        self.handler = handler
        self.thumbprint = clientCertificateThumbprint
    }

    /// What the `clientCertificateThumbprint` given at creation answers, or `nil`.
    public func clientCertificateThumbprint() throws -> String? { try thumbprint?() }

    /// Answers `request` with the handler's reply.
    public func send(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        try Task.checkCancellation()
        return try await handler(request)
    }

    /// Builds a reply to `request` with a status, headers and a body.
    public static func reply(
        to request: URLRequest,
        status: Int = 200,
        headers: [String: String] = [:],
        body: Data = Data()
    ) throws -> (Data, ResponseHead) {
        guard let url = request.url else { throw URLError(.badURL) }
        return (body, ResponseHead(statusCode: status, url: url, headerFields: HeaderFields(headers)))
    }

    /// Builds a JSON reply to `request`, with `Content-Type: application/json`.
    public static func reply(
        to request: URLRequest,
        status: Int = 200,
        headers: [String: String] = [:],
        json: String
    ) throws -> (Data, ResponseHead) {
        var headers = headers
        headers["Content-Type"] = headers["Content-Type"] ?? "application/json"
        return try reply(to: request, status: status, headers: headers, body: Data(json.utf8))
    }
}
