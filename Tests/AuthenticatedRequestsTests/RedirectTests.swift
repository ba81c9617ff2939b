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
        let target = try await LoopbackHTTPServer { _ in .init(body: #"{"name":"Ada"}"#) }
        let origin = try await LoopbackHTTPServer { request in
            .init(status: 302, headers: [("Location", "\(target.baseURL)/landing")])
        }
        defer {
            Task {
                try await target.shutdown()
                try await origin.shutdown()
            }
        }
        var request = URLRequest(url: origin.baseURL.appendingPathComponent("start"))
        request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSessionTransport().send(request)

        #expect(response.statusCode == 200)
        #expect(origin.requests.first?.header("Authorization") == "Bearer secret-token")
        #expect(target.requests.count == 1)
        #expect(target.requests.first?.uri == "/landing")
        #expect(target.requests.first?.header("Authorization") == nil)
    }

    @Test func aSameOriginRedirectKeepsTheAuthorizationHeader() async throws {
        let server = try await LoopbackHTTPServer { request in
            request.uri == "/start"
                ? .init(status: 302, headers: [("Location", "/landing")])
                : .init(body: "ok")
        }
        defer { Task { try await server.shutdown() } }
        var request = URLRequest(url: server.baseURL.appendingPathComponent("start"))
        request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")
        let (body, _) = try await URLSessionTransport().send(request)

        #expect(String(decoding: body, as: UTF8.self) == "ok")
        #expect(server.requests.map(\.uri) == ["/start", "/landing"])
        #expect(server.requests.last?.header("Authorization") == "Bearer secret-token")
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
}
