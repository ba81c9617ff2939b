import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The seam between this package and the network: sends one request, returns its body and its
/// ``ResponseHead`` (status, header fields in order, URL; no Foundation response object).
///
/// The default is ``URLSessionTransport``. Tests use ``InMemoryTransport``; a server can plug in
/// any HTTP client by conforming a small type to this protocol.
///
/// A conforming type must not follow a redirect to another origin with the `Authorization` header
/// still set: a credential goes only to the origin of the request it was applied to.
///
/// Requests to an authorization server go through ``send(_:options:)`` with
/// ``HTTPTransportOptions/authorizationServer(timeout:)``: no redirects, a total deadline and a
/// bounded body. The default implementation of that method enforces the deadline and the size
/// cap around ``send(_:)``, and turns a redirect that the transport followed into an error; a
/// transport that can refuse to follow a redirect in the first place (both of this package's
/// transports do) should implement it, so that a secret in a request body never reaches another
/// origin.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response body and head.
    ///
    /// - Throws: a transport error (for example `URLError`) when no HTTP response arrived,
    ///   or `CancellationError` when the calling task was cancelled.
    func send(_ request: URLRequest) async throws -> (Data, ResponseHead)

    /// Sends `request` under `options`: whether redirects are followed, a total deadline covering
    /// connect, headers and the whole body, and the largest body accepted.
    ///
    /// When `options.followsRedirects` is `false`, a `3xx` reply is returned as it is, and the
    /// request is never sent anywhere else.
    ///
    /// - Throws: ``HTTPTransportError`` when the deadline passes or the body is too large,
    ///   a transport error when no response arrived, `CancellationError` when cancelled.
    func send(_ request: URLRequest, options: HTTPTransportOptions) async throws -> (Data, ResponseHead)

    /// The `x5t#S256` thumbprint (RFC 8705 §3.1: base64url of the SHA-256 of the DER) of the
    /// client certificate this transport presents in its TLS handshakes now, or `nil` when it
    /// presents none (the default).
    ///
    /// Flows read it to use the server's mutual-TLS endpoints (`mtls_endpoint_aliases`) and to
    /// record which certificate a token was issued to; the authenticator reads it before sending
    /// a certificate-bound token, and refreshes a token bound to a certificate the transport no
    /// longer presents (its files were rotated). A transport that wraps another forwards it.
    ///
    /// - Throws: ``ClientIdentityError`` when the identity's files cannot be read or parsed.
    func clientCertificateThumbprint() throws -> String?
}

extension HTTPTransport {
    /// `nil`: no client certificate.
    public func clientCertificateThumbprint() throws -> String? { nil }

    /// Runs ``send(_:)`` within `options.timeout`, rejects a body over
    /// `options.maximumResponseSize`, and, when redirects are not allowed, rejects a response
    /// from another URL than the request's (the transport followed a redirect it should not
    /// have: implement this method to prevent it).
    public func send(_ request: URLRequest, options: HTTPTransportOptions) async throws -> (Data, ResponseHead) {
        let (body, response) = try await withDeadline(options.timeout, for: request) {
            try await send(request)
        }
        try options.check(body, of: response, for: request)
        return (body, response)
    }
}
