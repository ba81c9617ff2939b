// The endpoint and replies shared by the benchmarks and the instruction-count profile.
import AsyncHTTPClient
import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The JSON document the endpoint returns.
package struct Profile: Decodable, Sendable {
    package let name: String
}

/// The same endpoint, without authentication.
package struct PlainMe: Resource {
    package typealias Output = Profile
    package let transport: any HTTPTransport
    package let url: URL

    package init(transport: any HTTPTransport, url: URL) {
        self.transport = transport
        self.url = url
    }

    package func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
}

/// The same endpoint, through an authenticator.
package struct AuthenticatedMe: AuthenticatedResource {
    package typealias Output = Profile
    package let authenticator: any RequestAuthenticator
    package let transport: any HTTPTransport
    package let url: URL

    package init(authenticator: any RequestAuthenticator, transport: any HTTPTransport, url: URL) {
        self.authenticator = authenticator
        self.transport = transport
        self.url = url
    }

    package func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
}

/// The endpoint, its one reply, and tokens.
package enum Fixtures {
    package static let apiURL = URL(string: "https://api.example.com/me")!
    package static let body = Data(#"{"name":"Ada"}"#.utf8)
    package static let response = ResponseHead(
        statusCode: 200, url: apiURL, headerFields: [("Content-Type", "application/json")])

    /// Answers every request with one prebuilt reply: the transport costs the same in both
    /// overhead benchmarks, so their difference is the authentication layer.
    package static let inMemoryAPI = InMemoryTransport { _ in (body, response) }

    /// The `Authorization` field of a GET with ``validToken()``: the bare baselines send it too,
    /// so that they and the SDK do the same GETs.
    package static let authorization = "Bearer benchmark-access-token"

    package static func validToken() -> OAuthToken {
        OAuthToken(
            accessToken: "benchmark-access-token", expiresAt: Date().addingTimeInterval(86_400), refreshToken: "rt")
    }

    package static func expiredToken() -> OAuthToken {
        OAuthToken(accessToken: "expired-access-token", expiresAt: Date().addingTimeInterval(-10), refreshToken: "rt")
    }
}

/// A value behind a lock, for benchmark bookkeeping.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    // Sound: `value` is only touched inside `withLock`, under `lock`.
    private let lock = NSLock()
    private var value: Value
    package init(_ value: Value) { self.value = value }
    package func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

extension Locked where Value == Int {
    /// The counter's value, then one more: which variant of an interleaved benchmark goes first.
    package func next() -> Int {
        withLock { value in
            defer { value += 1 }
            return value
        }
    }
}

/// What a server written directly on AsyncHTTPClient does for one GET of `url`: the same 60 s
/// deadline as `AsyncHTTPClientTransport`'s default, the same `Authorization` field as the SDK's
/// GET, the body collected and decoded. The bare baseline of the loopback benchmarks and of
/// `Benchmarks/profile`.
package func bareAsyncHTTPClientGET(_ url: URL) async throws -> Profile {
    var request = HTTPClientRequest(url: url.absoluteString)
    request.headers.add(name: "Authorization", value: Fixtures.authorization)
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
    let body = try await response.body.collect(upTo: 16 << 20)
    return try JSONDecoder().decode(Profile.self, from: Data(body.readableBytesView))
}

/// What an app written directly on URLSession does for one GET of `url`: the same `Authorization`
/// field as the SDK's GET, the body decoded. The bare baseline of the URLSession benchmarks.
package func bareURLSessionGET(_ url: URL, on session: URLSession) async throws -> Profile {
    var request = URLRequest(url: url)
    request.setValue(Fixtures.authorization, forHTTPHeaderField: "Authorization")
    let (data, _) = try await session.data(for: request)
    return try JSONDecoder().decode(Profile.self, from: data)
}
