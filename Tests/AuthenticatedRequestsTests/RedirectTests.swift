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
}
