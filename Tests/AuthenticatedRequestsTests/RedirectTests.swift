import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The default transport over real loopback sockets: a token goes only to its own origin.
@Suite struct RedirectTests {
    @Test func aCrossOriginRedirectDropsTheAuthorizationHeader() async throws {
        let outcome = try await followRedirect(with: URLSessionTransport(), crossOrigin: true)
        #expect(outcome.status == 200)
        #expect(outcome.firstAuthorization == "Bearer secret-token")
        #expect(outcome.followedURI == "/landing")
        #expect(outcome.followedAuthorization == nil)
    }

    @Test func aSameOriginRedirectKeepsTheAuthorizationHeader() async throws {
        let outcome = try await followRedirect(with: URLSessionTransport(), crossOrigin: false)
        #expect(outcome.body == #"{"name":"Ada"}"#)
        #expect(outcome.followedURI == "/landing")
        #expect(outcome.followedAuthorization == "Bearer secret-token")
    }

    @Test func anAuthenticatedResourceOverTheDefaultTransportKeepsItsTokenHome() async throws {
        let target = try await LoopbackHTTPServer { _ in .init(body: #"{"name":"Eve"}"#) }
        let origin = try await LoopbackHTTPServer { _ in
            .init(status: 307, headers: [("Location", "\(target.baseURL)/me")])
        }
        defer {
            Task {
                try await target.shutdown()
                try await origin.shutdown()
            }
        }
        let authenticator = OAuthAuthenticator(flow: FakeFlow(), token: OAuthToken(accessToken: "access-0"))
        let profile = try await Me(
            authenticator: authenticator,
            transport: URLSessionTransport(),
            url: origin.baseURL.appendingPathComponent("me")
        ).request()
        #expect(profile.name == "Eve")
        #expect(origin.requests.first?.header("Authorization") == "Bearer access-0")
        #expect(target.requests.first?.header("Authorization") == nil)
    }

    @Test func theDefaultTransportKeepsNoCookiesAndSendsNoneFromTheSharedStore() async throws {
        let server = try await LoopbackHTTPServer { _ in
            .init(
                headers: [("Set-Cookie", "login=session-cookie-value; Path=/"), ("Cache-Control", "max-age=600")],
                body: #"{"name":"Ada"}"#)
        }
        defer { Task { try await server.shutdown() } }
        // A cookie of the app's, in the shared store, for the same origin.
        let shared = HTTPCookieStorage.shared
        let ambient = try #require(
            HTTPCookie(properties: [
                .name: "ambient", .value: "ambient-cookie-value", .domain: "127.0.0.1", .path: "/",
            ]))
        shared.setCookie(ambient)
        defer { shared.deleteCookie(ambient) }
        let transport = URLSessionTransport()
        for _ in 0..<2 {
            _ = try await transport.send(URLRequest(url: server.baseURL.appendingPathComponent("token")))
        }
        #expect(server.requests.count == 2, "the second request is not answered from a cache")
        #expect(
            server.requests.allSatisfy { $0.header("Cookie") == nil }, "no cookie from the shared store or the reply")
        let configuration = URLSessionTransport.defaultConfiguration()
        #expect(configuration.httpCookieStorage == nil)
        #expect(configuration.urlCache == nil)
    }
}
