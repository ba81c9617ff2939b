import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The seam between this package and the network: sends one request, returns its body and response.
///
/// The default is ``URLSessionTransport``. Tests use ``InMemoryTransport``; a server can plug in
/// any HTTP client by conforming a small type to this protocol.
///
/// A conforming type must not follow a redirect to another origin with the `Authorization` header
/// still set: a credential goes only to the origin of the request it was applied to.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response body and metadata.
    ///
    /// - Throws: a transport error (for example `URLError`) when no HTTP response arrived,
    ///   or `CancellationError` when the calling task was cancelled.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
}
