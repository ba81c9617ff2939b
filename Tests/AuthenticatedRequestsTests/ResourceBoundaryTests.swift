import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A token issued for one resource goes to that resource's URLs only (origin and path prefix).
@Suite struct ResourceBoundaryTests {
    let mcp = ResourceBoundary(URL(string: "https://api.example.com/mcp")!)

    @Test(arguments: [
        "https://api.example.com/mcp", "https://api.example.com/mcp/", "https://api.example.com/mcp/tools/call",
        "https://API.example.com:443/mcp?session=1", "https://api.example.com/mcp#x",
    ])
    func urlsOfTheResourceAreInside(_ url: String) {
        #expect(mcp.contains(URL(string: url)!))
    }

    @Test(arguments: [
        "https://api.example.com/mcpx", "https://api.example.com/other", "https://api.example.com/",
        "http://api.example.com/mcp", "https://api.example.com:8443/mcp", "https://evil.example.com/mcp",
        "https://api.example.com.evil.example/mcp",
    ])
    func otherURLsAreOutside(_ url: String) {
        #expect(!mcp.contains(URL(string: url)!))
    }

    @Test func aResourceAtTheOriginsRootContainsTheWholeOrigin() {
        let root = ResourceBoundary(URL(string: "https://api.example.com")!)
        #expect(root.contains(URL(string: "https://api.example.com/anything/below")!))
        #expect(!root.contains(URL(string: "https://other.example.com/")!))
        let slash = ResourceBoundary(URL(string: "https://api.example.com/")!)
        #expect(slash.contains(URL(string: "https://api.example.com/x")!))
    }

    /// A flow for one resource, counting what it does.
    final class BoundFlow: OAuthFlow {
        let storeKey = "bound@https://auth.example.com/token"
        let calls = Locked(0)
        var resourceBoundary: ResourceBoundary? { ResourceBoundary(URL(string: "https://a.example.com/api")!) }
        func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
            calls.withLock { $0 += 1 }
            return OAuthToken(accessToken: "token-for-a", expiresAt: context.clock.now + 3600)
        }
        func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
            try await obtainToken(for: context)
        }
    }

    @Test func anAuthenticatorForOneResourceSendsNothingToAnotherAndObtainsNothingForIt() async throws {
        let flow = BoundFlow()
        let sent = Locked<[URLRequest]>([])
        let transport = InMemoryTransport { request in
            sent.withLock { $0.append(request) }
            return try InMemoryTransport.reply(to: request, json: #"{"name":"Ada"}"#)
        }
        let authenticator = OAuthAuthenticator(flow: flow, configuration: .init(clock: TestClock()))
        for foreign in ["https://b.example.com/api/me", "https://a.example.com/other/me"] {
            let error = await #expect(throws: AuthenticationError.self) {
                try await Me(authenticator: authenticator, transport: transport, url: URL(string: foreign)!).request()
            }
            #expect(error?.code == .foreignResource)
            #expect(error?.description.contains("token-for-a") == false)
        }
        #expect(sent.withLock { $0.isEmpty }, "nothing was sent")
        #expect(flow.calls.withLock { $0 } == 0, "no sign-in for a URL the token may not go to")
        // With a token in hand, the same: the token never goes to another resource.
        _ = try await Me(
            authenticator: authenticator, transport: transport, url: URL(string: "https://a.example.com/api/me")!
        )
        .request()
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(
                authenticator: authenticator, transport: transport, url: URL(string: "https://b.example.com/api/me")!
            )
            .request()
        }
        #expect(error?.code == .foreignResource)
        #expect(sent.withLock { $0.map { $0.url?.host ?? "" } } == ["a.example.com"])
    }
}
