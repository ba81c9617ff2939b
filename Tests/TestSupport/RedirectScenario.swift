import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What each server saw of a request sent with `Authorization: Bearer secret-token` and
/// redirected once (302), over real loopback sockets.
package struct RedirectOutcome: Sendable {
    package let status: Int
    package let body: String
    /// The `Authorization` header at the first server.
    package let firstAuthorization: String?
    /// The path and `Authorization` header of the request that followed the redirect.
    package let followedURI: String?
    package let followedAuthorization: String?
}

/// Sends a request through `transport` to a server that redirects it, to another origin
/// (`crossOrigin`, a second server on another port) or to itself.
package func followRedirect(with transport: any HTTPTransport, crossOrigin: Bool) async throws -> RedirectOutcome {
    let target = try await LoopbackHTTPServer { _ in .init(body: #"{"name":"Ada"}"#) }
    let origin = try await LoopbackHTTPServer { request in
        if request.uri == "/start" {
            return .init(status: 302, headers: [("Location", crossOrigin ? "\(target.baseURL)/landing" : "/landing")])
        }
        return .init(body: #"{"name":"Ada"}"#)
    }
    defer {
        Task {
            try await target.shutdown()
            try await origin.shutdown()
        }
    }
    var request = URLRequest(url: origin.baseURL.appendingPathComponent("start"))
    request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")
    let (body, response) = try await transport.send(request)
    let followed = crossOrigin ? target.requests.first : origin.requests.dropFirst().first
    return RedirectOutcome(
        status: response.statusCode,
        body: String(decoding: body, as: UTF8.self),
        firstAuthorization: origin.requests.first?.header("Authorization"),
        followedURI: followed?.uri,
        followedAuthorization: followed?.header("Authorization")
    )
}
