#if MCP
    import AuthenticatedRequests
    import Foundation
    import MCPAuthentication
    import ResourceDiscovery
    import TestSupport
    import Testing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The MCP authorizer in memory, on an injected clock: the first challenge signs in, the
    /// synchronous header never carries an expired token, and concurrent challenges share one
    /// refresh.
    @Suite struct MCPAuthorizerTests {
        let endpoint = URL(string: "https://api.example.com/mcp")!
        let challenge = [
            "WWW-Authenticate":
                #"Bearer resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/mcp""#
        ]

        func tokenRequests(_ network: ResourceNetwork, grant: String) -> Int {
            network.requests(to: "/token").filter { request in
                ResourceNetwork.form(request).contains { $0 == ("grant_type", grant) }
            }.count
        }

        @Test func theFirstChallengeSignsInFromTheURLAlone() async throws {
            let network = ResourceNetwork()
            let authorizer = MCPAuthorizer(signIn: network.signIn())
            #expect(authorizer.authorizationHeader(for: endpoint) == nil)
            let handled = try await authorizer.handleChallenge(
                statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: "initialize",
                session: URLSession.shared)
            #expect(handled)
            let header = try #require(authorizer.authorizationHeader(for: endpoint))
            #expect(header.hasPrefix("Bearer at-authorization_code-"))
            #expect(network.registrations.withLock { $0 } == 1)
            let exchange = ResourceNetwork.form(try #require(network.requests(to: "/token").first))
            #expect(exchange.contains { $0 == ("resource", endpoint.absoluteString) })
        }

        @Test func theHeaderNeverCarriesAnExpiredTokenAndPreparationRefreshesIt() async throws {
            let network = ResourceNetwork()
            let authorizer = MCPAuthorizer(signIn: network.signIn())
            _ = try await authorizer.handleChallenge(
                statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: nil, session: URLSession.shared)
            let first = try #require(authorizer.authorizationHeader(for: endpoint))

            network.clock.advance(by: 61)  // the token (60 s) has expired: the snapshot is withheld
            #expect(authorizer.authorizationHeader(for: endpoint) == nil)
            try await authorizer.prepareAuthorization(for: endpoint, session: URLSession.shared)
            let second = try #require(authorizer.authorizationHeader(for: endpoint))
            #expect(second != first)
            #expect(tokenRequests(network, grant: "refresh_token") == 1)
            let refresh = ResourceNetwork.form(try #require(network.requests(to: "/token").last))
            #expect(refresh.contains { $0 == ("resource", endpoint.absoluteString) })
        }

        @Test func concurrentRejectionsShareOneRefresh() async throws {
            let network = ResourceNetwork()
            let authorizer = MCPAuthorizer(signIn: network.signIn())
            _ = try await authorizer.handleChallenge(
                statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: nil, session: URLSession.shared)
            let rejected = ["WWW-Authenticate": #"Bearer error="invalid_token""#]
            let endpoint = self.endpoint
            let results = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        try await authorizer.handleChallenge(
                            statusCode: 401, headers: rejected, endpoint: endpoint, operationKey: "tools/list",
                            session: URLSession.shared)
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.allSatisfy { $0 })
            #expect(tokenRequests(network, grant: "refresh_token") == 1, "six rejections, one refresh")
        }

        @Test func anEndpointThatIsNotHTTPSOrLoopbackIsRefused() throws {
            let authorizer = MCPAuthorizer(signIn: ResourceNetwork().signIn())
            #expect(throws: ResourceDiscoveryError.self) {
                try authorizer.validateEndpointSecurity(for: URL(string: "http://mcp.example.com/mcp")!)
            }
            try authorizer.validateEndpointSecurity(for: URL(string: "http://127.0.0.1:8080/mcp")!)
            try authorizer.validateEndpointSecurity(for: endpoint)
        }
    }
#endif
