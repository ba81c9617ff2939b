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

    // MARK: The path as the server reads it

    @Test(arguments: [
        "https://api.example.com/mcp/../admin", "https://api.example.com/mcp/%2e%2e/admin",
        "https://api.example.com/mcp/%2E%2E/admin", "https://api.example.com/mcp/./../admin",
        "https://api.example.com/mcp/..", "https://api.example.com/mcp/%2e%2E",
        "https://api.example.com/mcp/.%2e/admin",
        "https://api.example.com/mcp/tools/../../admin", "https://api.example.com/mcp/%2E./x/../../admin",
        "https://api.example.com/%6Dcp/../admin",
    ])
    func dotSegmentsThatLeaveTheResourceAreOutside(_ url: String) {
        #expect(!mcp.contains(URL(string: url)!), "\(url) reaches a path outside /mcp")
    }

    @Test(arguments: [
        "https://api.example.com/mcp/%2F..%2Fadmin", "https://api.example.com/mcp/..%2fadmin",
        "https://api.example.com/mcp/..%5Cadmin", "https://api.example.com/mcp/..;/admin",
        "https://api.example.com/mcp/.;x/tools", "https://api.example.com/mcp/%252e%252e/admin",
        "https://api.example.com/mcp/%00/tools",
    ])
    func pathsServersReadInMoreThanOneWayAreOutside(_ url: String) {
        #expect(!mcp.contains(URL(string: url)!), "\(url) is ambiguous")
    }

    @Test(arguments: [
        "https://api.example.com/mcp/./tools", "https://api.example.com/mcp/tools/../call",
        "https://api.example.com/%6Dcp/tools", "https://api.example.com/mcp/%7Euser",
        "https://api.example.com/mcp/a%20b",
        "https://api.example.com/x/../mcp/tools",
    ])
    func spellingsThatStayInsideAreInside(_ url: String) {
        #expect(mcp.contains(URL(string: url)!), "\(url) reaches /mcp or below")
    }

    @Test func aResourceWrittenWithDotSegmentsIsReadAsTheServerReadsIt() {
        let written = ResourceBoundary(URL(string: "https://api.example.com/v1/../mcp")!)
        #expect(written.contains(URL(string: "https://api.example.com/mcp/tools")!))
        #expect(!written.contains(URL(string: "https://api.example.com/v1/tools")!))
    }

    @Test func anAuthenticatorRefusesEveryDotSegmentSpellingBeforeAnythingIsSent() async throws {
        let flow = BoundFlow()
        let sent = Locked<[URLRequest]>([])
        let transport = InMemoryTransport { request in
            sent.withLock { $0.append(request) }
            return try InMemoryTransport.reply(to: request, json: #"{"name":"Ada"}"#)
        }
        let authenticator = OAuthAuthenticator(flow: flow, configuration: .init(clock: TestClock()))
        _ = try await Me(
            authenticator: authenticator, transport: transport, url: URL(string: "https://a.example.com/api/me")!
        ).request()
        for spelling in [
            "https://a.example.com/api/../admin", "https://a.example.com/api/%2e%2e/admin",
            "https://a.example.com/api/%2E%2E/admin", "https://a.example.com/api/./../admin",
            "https://a.example.com/api/..",
        ] {
            let error = await #expect(throws: AuthenticationError.self) {
                try await Me(authenticator: authenticator, transport: transport, url: URL(string: spelling)!).request()
            }
            #expect(error?.code == .foreignResource, "\(spelling)")
        }
        #expect(sent.withLock { $0.count } == 1, "only the request inside the resource was sent")
    }

    // MARK: Redirects

    @Test func aSameOriginRedirectOutsideTheBoundaryIsFollowedWithoutTheToken() async throws {
        let sent = Locked<[URLRequest]>([])
        let transport = InMemoryTransport { request in
            sent.withLock { $0.append(request) }
            switch request.url?.path {
            case "/api/me":
                return try InMemoryTransport.reply(to: request, status: 307, headers: ["Location": "/admin/me"])
            case "/api/moved":
                return try InMemoryTransport.reply(to: request, status: 308, headers: ["Location": "/api/me2"])
            default: return try InMemoryTransport.reply(to: request, json: #"{"name":"Ada"}"#)
            }
        }
        let authenticator = OAuthAuthenticator(flow: BoundFlow(), configuration: .init(clock: TestClock()))
        _ = try await Me(
            authenticator: authenticator, transport: transport, url: URL(string: "https://a.example.com/api/me")!
        ).request()
        let requests = sent.withLock { $0 }
        #expect(requests.map { $0.url?.path } == ["/api/me", "/admin/me"])
        #expect(requests[0].value(forHTTPHeaderField: "Authorization") == "Bearer token-for-a")
        #expect(requests[1].value(forHTTPHeaderField: "Authorization") == nil, "the token stays inside /api")
        // A redirect inside the boundary keeps it.
        sent.withLock { $0.removeAll() }
        _ = try await Me(
            authenticator: authenticator, transport: transport, url: URL(string: "https://a.example.com/api/moved")!
        ).request()
        let inside = sent.withLock { $0 }
        #expect(inside.map { $0.url?.path } == ["/api/moved", "/api/me2"])
        #expect(inside.allSatisfy { $0.value(forHTTPHeaderField: "Authorization") == "Bearer token-for-a" })
    }

    @Test func aRedirectToDotSegmentsLeavingTheBoundaryCarriesNoToken() async throws {
        let sent = Locked<[URLRequest]>([])
        let transport = InMemoryTransport { request in
            sent.withLock { $0.append(request) }
            if request.url?.path == "/api/me" {
                return try InMemoryTransport.reply(to: request, status: 302, headers: ["Location": "/api/%2e%2e/admin"])
            }
            return try InMemoryTransport.reply(to: request, json: #"{"name":"Ada"}"#)
        }
        let authenticator = OAuthAuthenticator(flow: BoundFlow(), configuration: .init(clock: TestClock()))
        _ = try await Me(
            authenticator: authenticator, transport: transport, url: URL(string: "https://a.example.com/api/me")!
        ).request()
        let requests = sent.withLock { $0 }
        #expect(requests.count == 2)
        #expect(requests.last?.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test func redirectsAreBounded() async throws {
        let count = Locked(0)
        let transport = InMemoryTransport { request in
            count.withLock { $0 += 1 }
            return try InMemoryTransport.reply(to: request, status: 307, headers: ["Location": "/api/me"])
        }
        let authenticator = OAuthAuthenticator(flow: BoundFlow(), configuration: .init(clock: TestClock()))
        await #expect(throws: (any Error).self) {
            try await Me(
                authenticator: authenticator, transport: transport, url: URL(string: "https://a.example.com/api/me")!
            ).request()
        }
        #expect(count.withLock { $0 } == 11, "the request and ten redirects, no more")
    }
}
