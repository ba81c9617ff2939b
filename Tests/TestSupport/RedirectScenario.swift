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

/// What happened to a form `POST` carrying a secret, sent with the authorization-server options
/// to a server that redirects it (`status`) to a second server on another port.
package struct SecretRedirectOutcome: Sendable {
    /// The status the caller saw.
    package let status: Int?
    /// The error the caller saw, if any.
    package let error: String?
    /// Every request the redirect's target received.
    package let targetRequests: [LoopbackHTTPServer.Request]
}

/// Posts `client_secret=s3cr3t&refresh_token=rt-s3cr3t` under
/// ``HTTPTransportOptions/authorizationServer(timeout:)`` to a server answering with a redirect.
package func postSecretThroughRedirect(
    with transport: any HTTPTransport,
    status: Int,
    targetScheme: String = "http"
) async throws -> SecretRedirectOutcome {
    let target = try await LoopbackHTTPServer { _ in
        .init(headers: [("Content-Type", "application/json")], body: #"{"access_token":"stolen"}"#)
    }
    let origin = try await LoopbackHTTPServer { _ in
        .init(status: status, headers: [("Location", "\(targetScheme)://127.0.0.1:\(target.port)/token")])
    }
    defer {
        Task {
            try await target.shutdown()
            try await origin.shutdown()
        }
    }
    var request = URLRequest(url: origin.baseURL.appendingPathComponent("token"))
    request.httpMethod = "POST"
    request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
    request.setValue("Basic Y2xpZW50OnMzY3IzdA==", forHTTPHeaderField: "Authorization")
    request.httpBody = Data("client_secret=s3cr3t&refresh_token=rt-s3cr3t".utf8)
    do {
        let (_, response) = try await transport.send(request, options: .authorizationServer(timeout: 10))
        return SecretRedirectOutcome(status: response.statusCode, error: nil, targetRequests: target.requests)
    } catch {
        return SecretRedirectOutcome(status: nil, error: "\(error)", targetRequests: target.requests)
    }
}
