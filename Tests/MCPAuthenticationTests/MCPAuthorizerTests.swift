#if MCP
    import AuthenticatedRequests
    import CodeFlowOAuth
    import DPoP
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

        @Test func discoveryReadsTheChallengeTheServerSentAndSendsNoRequestOfItsOwn() async throws {
            let network = ResourceNetwork()
            let browser = ResourceNetwork.Browser(issuer: "https://auth.example.com")
            let authorizer = MCPAuthorizer(signIn: network.signIn(browser: browser))
            try await authorizer.prepareAuthorization(for: endpoint, session: URLSession.shared)
            #expect(network.requests.withLock { $0.isEmpty }, "before the first challenge: nothing discovered")
            // The server's real 401 names its metadata and a scope other than the metadata's.
            let sent = [
                "www-authenticate":
                    #"Bearer resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/mcp", scope="notes:write""#
            ]
            #expect(
                try await authorizer.handleChallenge(
                    statusCode: 401, headers: sent, endpoint: endpoint, operationKey: "initialize",
                    session: URLSession.shared))
            #expect(network.requests(to: "/mcp").isEmpty, "no probe of the MCP server: its 401 was read")
            let opened = try #require(browser.opened.withLock { $0.first })
            let scope = URLComponents(url: opened, resolvingAgainstBaseURL: false)?.queryItems?
                .first { $0.name == "scope" }?.value
            #expect(scope == "notes:write", "the challenge's scope comes first")
            #expect(network.registrations.withLock { $0 } == 1, "one registration for the whole sign-in")
            try await authorizer.prepareAuthorization(for: endpoint, session: URLSession.shared)
            #expect(network.registrations.withLock { $0 } == 1)
        }

        @Test func aURLOutsideTheMCPServerGetsNoHeaderAndItsChallengeIsRefused() async throws {
            let network = ResourceNetwork()
            let authorizer = MCPAuthorizer(signIn: network.signIn())
            _ = try await authorizer.handleChallenge(
                statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: nil, session: URLSession.shared)
            #expect(authorizer.authorizationHeader(for: endpoint) != nil)
            #expect(authorizer.authorizationHeader(for: endpoint.appendingPathComponent("messages")) != nil)
            let before = network.requests.withLock { $0.count }
            for foreign in [
                "https://evil.example.com/mcp", "https://api.example.com/other", "http://api.example.com/mcp",
                // Dot segments and their encodings: the server reads /admin.
                "https://api.example.com/mcp/../admin", "https://api.example.com/mcp/%2e%2e/admin",
                "https://api.example.com/mcp/%2E%2E/admin", "https://api.example.com/mcp/./../admin",
                "https://api.example.com/mcp/..",
            ] {
                let url = try #require(URL(string: foreign))
                #expect(authorizer.authorizationHeader(for: url) == nil, "\(foreign)")
                let error = await #expect(throws: AuthenticationError.self) {
                    _ = try await authorizer.handleChallenge(
                        statusCode: 401, headers: challenge, endpoint: url, operationKey: nil,
                        session: URLSession.shared)
                }
                #expect(error?.code == .foreignResource)
            }
            #expect(network.requests.withLock { $0.count } == before, "nothing sent, nothing refreshed")
        }

        @Test func aOneClosureAgentSignsInAndARefusalArrivesAsTheSignInsOwnError() async throws {
            let network = ResourceNetwork()
            let approve = ClosureUserAgent { authorizationURL in
                let items = URLComponents(url: authorizationURL, resolvingAgainstBaseURL: false)?.queryItems ?? []
                let value = { (name: String) in items.first { $0.name == name }?.value ?? "" }
                return try #require(
                    URL(
                        string:
                            "\(value("redirect_uri"))?code=c0de&state=\(value("state"))&iss=https://auth.example.com"))
            }
            let authorizer = MCPAuthorizer(signIn: network.signIn(method: .browser(approve)))
            _ = try await authorizer.handleChallenge(
                statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: nil, session: URLSession.shared)
            #expect(authorizer.authorizationHeader(for: endpoint)?.hasPrefix("Bearer at-authorization_code-") == true)

            let deny = ClosureUserAgent { authorizationURL in
                let items = URLComponents(url: authorizationURL, resolvingAgainstBaseURL: false)?.queryItems ?? []
                let value = { (name: String) in items.first { $0.name == name }?.value ?? "" }
                return try #require(
                    URL(
                        string:
                            "\(value("redirect_uri"))?error=access_denied&state=\(value("state"))&iss=https://auth.example.com"
                    ))
            }
            let refused = MCPAuthorizer(signIn: ResourceNetwork().signIn(method: .browser(deny)))
            await #expect(throws: OAuthError.self) {
                _ = try await refused.handleChallenge(
                    statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: nil,
                    session: URLSession.shared)
            }
            let denied = refused.lastError as? OAuthError
            #expect(
                denied?.code == .accessDenied,
                "the documented type, not a wrapper: \(String(describing: refused.lastError))")

            let forged = ClosureUserAgent { authorizationURL in
                let items = URLComponents(url: authorizationURL, resolvingAgainstBaseURL: false)?.queryItems ?? []
                let redirect = items.first { $0.name == "redirect_uri" }?.value ?? ""
                return try #require(URL(string: "\(redirect)?code=c0de&state=forged&iss=https://auth.example.com"))
            }
            let mismatched = MCPAuthorizer(signIn: ResourceNetwork().signIn(method: .browser(forged)))
            await #expect(throws: CodeFlowError.self) {
                _ = try await mismatched.handleChallenge(
                    statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: nil,
                    session: URLSession.shared)
            }
            #expect(mismatched.lastError is CodeFlowError, "\(String(describing: mismatched.lastError))")
        }

        @Test func anAuthorizerShowsNoSecretToDumpOrDescriptions() async throws {
            let network = ResourceNetwork()
            var policy = ClientRegistrationPolicy.dynamic(clientName: "Notes")
            policy.initialAccessToken = "IAT-initial-secret-0001"
            let authorizer = MCPAuthorizer(signIn: network.signIn(policy: policy))
            _ = try await authorizer.handleChallenge(
                statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: nil, session: URLSession.shared)
            let header = try #require(authorizer.authorizationHeader(for: endpoint))
            let token = try #require(try await authorizer.authenticator().currentCredential())
            var dumped = ""
            dump(authorizer, to: &dumped)
            for text in [dumped, String(describing: authorizer), String(reflecting: authorizer)] {
                for secret in ["IAT-initial-secret-0001", token.accessToken, token.refreshToken ?? "none", header] {
                    #expect(!text.contains(secret), "\(secret) shown")
                }
            }
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
        /// The claims of a DPoP proof.
        func claims(ofProof proof: String) throws -> [String: Any] {
            let parts = proof.split(separator: ".")
            #expect(parts.count == 3)
            var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+")
                .replacingOccurrences(of: "_", with: "/")
            while payload.count % 4 != 0 { payload += "=" }
            let data = try #require(Data(base64Encoded: payload))
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }

        func dpopSignedIn() async throws -> (ResourceNetwork, MCPAuthorizer) {
            let network = ResourceNetwork()
            network.settings.withLock { $0.tokenType = "DPoP" }
            let authorizer = MCPAuthorizer(
                signIn: network.signIn(proofOfPossession: DPoPProver(clock: network.clock)))
            _ = try await authorizer.handleChallenge(
                statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: nil, session: URLSession.shared)
            return (network, authorizer)
        }

        @Test func everyRequestTheTransportSendsGetsAFreshDPoPProofForItsMethod() async throws {
            let (network, authorizer) = try await dpopSignedIn()
            let header = try #require(authorizer.authorizationHeader(for: endpoint))
            #expect(header.hasPrefix("DPoP at-authorization_code-"))
            #expect(network.requests(to: "/token").allSatisfy { $0.value(forHTTPHeaderField: "DPoP") != nil })

            var proofs: [[String: Any]] = []
            for method in ["POST", "GET", "DELETE"] {
                var request = URLRequest(url: endpoint)
                request.httpMethod = method
                request.setValue(header, forHTTPHeaderField: "Authorization")
                let modified = authorizer.modify(request)
                #expect(modified.value(forHTTPHeaderField: "Authorization") == header)
                let proof = try #require(modified.value(forHTTPHeaderField: "DPoP"), "a proof on \(method)")
                let claims = try claims(ofProof: proof)
                #expect(claims["htm"] as? String == method)
                #expect(claims["htu"] as? String == endpoint.absoluteString)
                #expect(claims["ath"] is String, "bound to the access token")
                proofs.append(claims)
            }
            #expect(Set(proofs.compactMap { $0["jti"] as? String }).count == 3, "a new jti each time")

            // A request the transport sent without our header is left alone.
            let bare = authorizer.modify(URLRequest(url: endpoint))
            #expect(bare.value(forHTTPHeaderField: "DPoP") == nil)
        }

        @Test func aDPoPNonceChallengeIsAnsweredOnceWithTheNonceAndNoRefresh() async throws {
            let (network, authorizer) = try await dpopSignedIn()
            let handled = try await authorizer.handleChallenge(
                statusCode: 401,
                headers: ["WWW-Authenticate": #"DPoP error="use_dpop_nonce""#, "DPoP-Nonce": "n-42"],
                endpoint: endpoint, operationKey: "tools/list", session: URLSession.shared)
            #expect(handled)
            #expect(tokenRequests(network, grant: "refresh_token") == 0, "a nonce is not a refresh")
            var request = URLRequest(url: endpoint)
            request.httpMethod = "POST"
            request.setValue(
                try #require(authorizer.authorizationHeader(for: endpoint)), forHTTPHeaderField: "Authorization")
            let proof = try #require(authorizer.modify(request).value(forHTTPHeaderField: "DPoP"))
            #expect(try claims(ofProof: proof)["nonce"] as? String == "n-42")
        }

        @Test func aStepUpIsAnsweredOncePerOperationThenRefused() async throws {
            let network = ResourceNetwork()
            let browser = ResourceNetwork.Browser(issuer: nil)
            let authorizer = MCPAuthorizer(signIn: network.signIn(browser: browser))
            _ = try await authorizer.handleChallenge(
                statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: nil, session: URLSession.shared)
            let insufficient = [
                "WWW-Authenticate": #"Bearer error="insufficient_scope", scope="notes:admin""#
            ]
            let stepped = try await authorizer.handleChallenge(
                statusCode: 403, headers: insufficient, endpoint: endpoint, operationKey: "call-1",
                session: URLSession.shared)
            #expect(stepped)
            #expect(browser.opened.withLock { $0.count } == 2, "one re-authorization")
            let scope = browser.opened.withLock { $0.last }.flatMap {
                URLComponents(url: $0, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "scope" }?.value
            }
            #expect(scope?.split(separator: " ").contains("notes:admin") == true)

            await #expect(throws: StepUpError.self) {
                _ = try await authorizer.handleChallenge(
                    statusCode: 403, headers: insufficient, endpoint: endpoint, operationKey: "call-1",
                    session: URLSession.shared)
            }
            #expect(browser.opened.withLock { $0.count } == 2, "no loop: the same challenge is refused")
            #expect(authorizer.lastError is StepUpError)
        }

        @Test func aResourceThatMovedToAnotherAuthorizationServerIsSignedInToThereWithANewClient() async throws {
            let network = ResourceNetwork()
            let browser = ResourceNetwork.Browser(issuer: nil)
            let authorizer = MCPAuthorizer(signIn: network.signIn(browser: browser))
            _ = try await authorizer.handleChallenge(
                statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: nil, session: URLSession.shared)
            let before = try #require(authorizer.authorizationHeader(for: endpoint))

            network.settings.withLock { $0.issuer = "https://auth2.example.com" }  // the metadata names AS₂ now
            let handled = try await authorizer.handleChallenge(
                statusCode: 401, headers: ["WWW-Authenticate": #"Bearer error="invalid_token""#],
                endpoint: endpoint, operationKey: "tools/list", session: URLSession.shared)
            #expect(handled)
            #expect(try #require(authorizer.authorizationHeader(for: endpoint)) != before)
            #expect(network.registrations.withLock { $0 } == 2, "registered again at the new server")
            let atNewServer = network.requests.withLock { $0 }.filter { $0.url?.host == "auth2.example.com" }
            #expect(!atNewServer.isEmpty)
            for request in atNewServer {
                let form = ResourceNetwork.form(request)
                #expect(!form.contains { $0.0 == "client_id" && $0.1 == "client-1" }, "AS₁'s client never reaches AS₂")
                #expect(request.value(forHTTPHeaderField: "Authorization")?.contains("Y2xpZW50LTE6") != true)
            }
            #expect(browser.opened.withLock { $0.last?.host } == "auth2.example.com")
        }
    }
#endif
