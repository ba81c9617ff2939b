#if AsyncHTTPClient
    import AsyncHTTPClientTransport
    import AuthenticatedRequests
    import Foundation
    import Testing
    import TestSupport

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The same rule as the default transport, over real loopback sockets.
    @Suite struct AsyncHTTPClientTransportTests {
        @Test func aCrossOriginRedirectDropsTheAuthorizationHeader() async throws {
            let target = try await LoopbackHTTPServer { _ in .init(body: #"{"name":"Ada"}"#) }
            let origin = try await LoopbackHTTPServer { _ in
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
            let (body, response) = try await AsyncHTTPClientTransport().send(request)

            #expect(response.statusCode == 200)
            #expect(String(decoding: body, as: UTF8.self) == #"{"name":"Ada"}"#)
            #expect(origin.requests.first?.header("Authorization") == "Bearer secret-token")
            #expect(target.requests.first?.uri == "/landing")
            #expect(target.requests.first?.header("Authorization") == nil)
        }

        @Test func aSameOriginRedirectKeepsTheAuthorizationHeader() async throws {
            let server = try await LoopbackHTTPServer { request in
                request.uri == "/start" ? .init(status: 302, headers: [("Location", "/landing")]) : .init(body: "ok")
            }
            defer { Task { try await server.shutdown() } }
            var request = URLRequest(url: server.baseURL.appendingPathComponent("start"))
            request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")
            _ = try await AsyncHTTPClientTransport().send(request)
            #expect(server.requests.map(\.uri) == ["/start", "/landing"])
            #expect(server.requests.last?.header("Authorization") == "Bearer secret-token")
        }

        @Test func anAuthenticatedResourceWorksOverIt() async throws {
            let server = try await LoopbackHTTPServer { request in
                request.header("Authorization") == "Bearer access-0"
                    ? .init(headers: [("Content-Type", "application/json")], body: #"{"name":"Ada"}"#)
                    : .init(status: 401, headers: [("WWW-Authenticate", "Bearer")])
            }
            defer { Task { try await server.shutdown() } }
            let authenticator = OAuthAuthenticator(flow: FakeFlow(), token: OAuthToken(accessToken: "access-0"))
            let me = Me(
                authenticator: authenticator, transport: AsyncHTTPClientTransport(),
                url: server.baseURL.appendingPathComponent("me"))
            #expect(try await me.request().name == "Ada")
            #expect(server.requests.map(\.method) == ["GET"])
            #expect(server.requests.first?.header("Authorization") == "Bearer access-0")
        }
    }
#endif
