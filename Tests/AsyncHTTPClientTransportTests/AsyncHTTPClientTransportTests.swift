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
            let outcome = try await followRedirect(with: AsyncHTTPClientTransport(), crossOrigin: true)
            #expect(outcome.status == 200)
            #expect(outcome.body == #"{"name":"Ada"}"#)
            #expect(outcome.firstAuthorization == "Bearer secret-token")
            #expect(outcome.followedURI == "/landing")
            #expect(outcome.followedAuthorization == nil)
        }

        @Test func aSameOriginRedirectKeepsTheAuthorizationHeader() async throws {
            let outcome = try await followRedirect(with: AsyncHTTPClientTransport(), crossOrigin: false)
            #expect(outcome.followedURI == "/landing")
            #expect(outcome.followedAuthorization == "Bearer secret-token")
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
