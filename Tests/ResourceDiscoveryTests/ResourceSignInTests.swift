import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import ResourceDiscovery
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Probe: AuthenticatedResource {
    let authenticator: any RequestAuthenticator
    let url: URL
    func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
    func decode(_ body: Data, from response: ResponseHead) throws -> Data { body }
}

/// Signing in from a resource's URL, in memory: the order of the steps, what each request
/// carries, what is stored where, and every refusal before anything reaches the wrong party.
@Suite struct ResourceSignInTests {
    @Test func theWholePathFromTheFirst401ToARefreshThatNamesTheResource() async throws {
        let network = ResourceNetwork()
        let browser = ResourceNetwork.Browser(issuer: "https://auth.example.com")
        let store = InMemoryTokenStore()
        let authenticator = try await network.signIn(store: store, browser: browser).authenticator()
        let resource = URL(string: "https://api.example.com/mcp")!
        _ = try await Probe(authenticator: authenticator, url: resource).request()

        let paths = network.requests.withLock { $0.map { $0.url?.path ?? "" } }
        #expect(
            paths == [
                "/mcp", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server",
                "/register", "/token", "/mcp",
            ])
        let registration = try #require(network.requests(to: "/register").first)
        let body = try #require(
            try JSONSerialization.jsonObject(with: registration.httpBody ?? Data()) as? [String: Any])
        #expect(body["application_type"] as? String == "native")
        #expect(body["token_endpoint_auth_method"] as? String == "none")
        #expect(body["grant_types"] as? [String] == ["authorization_code", "refresh_token"])
        // The exact loopback URI, port included (servers that compare exactly accept it), and the
        // sign-in listens where it registered.
        let registered = try #require((body["redirect_uris"] as? [String])?.first.flatMap(URL.init(string:)))
        #expect((body["redirect_uris"] as? [String])?.count == 1)
        #expect(registered.host == "127.0.0.1" && registered.path == "/callback" && (registered.port ?? 0) > 0)
        #expect(browser.asked.withLock { $0 } == [registered])
        #expect(body["client_name"] as? String == "Notes")

        let opened = try #require(browser.opened.withLock { $0.first })
        let query = Dictionary(
            (URLComponents(url: opened, resolvingAgainstBaseURL: false)?.queryItems ?? []).map {
                ($0.name, $0.value ?? "")
            }
        ) { first, _ in first }
        #expect(query["resource"] == resource.absoluteString)
        #expect(query["code_challenge_method"] == "S256")
        #expect(query["scope"] == "notes:read", "the challenge's scope wins over scopes_supported")
        #expect(query["client_id"] == "client-1")
        let exchange = ResourceNetwork.form(try #require(network.requests(to: "/token").first))
        #expect(exchange.contains { $0 == ("resource", resource.absoluteString) })

        // The session is stored under the client, the token endpoint and the resource; a refresh
        // at expiry names the resource too.
        let key = "client-1@https://auth.example.com/token#resource=https://api.example.com/mcp"
        #expect(try await store.load(forKey: key) != nil)
        network.clock.advance(by: 120)
        _ = try await Probe(authenticator: authenticator, url: resource).request()
        let refresh = ResourceNetwork.form(try #require(network.requests(to: "/token").last))
        #expect(refresh.contains { $0 == ("grant_type", "refresh_token") })
        #expect(refresh.contains { $0 == ("resource", resource.absoluteString) })
    }

    @Test func aLaterLaunchListensOnThePortItRegisteredAndRegistersNoMore() async throws {
        let network = ResourceNetwork()
        let store = InMemoryTokenStore()
        let resource = URL(string: "https://api.example.com/mcp")!
        var asked: [URL] = []
        for _ in 0..<2 {
            let browser = ResourceNetwork.Browser(issuer: "https://auth.example.com")
            _ = try await Probe(
                authenticator: try await network.signIn(store: store, browser: browser).authenticator(
                    account: "\(asked.count)"),
                url: resource
            ).request()
            asked += browser.asked.withLock { $0 }
        }
        #expect(network.registrations.withLock { $0 } == 1)
        #expect(asked.count == 2)
        #expect(Set(asked).count == 1, "the same registered port: \(asked)")
        #expect(asked.first?.port != nil)
    }

    @Test func theRegistrationIsKeptUnderTheIssuerAndReusedUntilTheIssuerChanges() async throws {
        let network = ResourceNetwork()
        let store = InMemoryTokenStore()
        _ = try await network.signIn(store: store).authenticator()
        _ = try await network.signIn(store: store).authenticator()
        #expect(network.registrations.withLock { $0 } == 1, "a second launch reuses it")
        let stored = try #require(try await store.load(forKey: "client-registration@https://auth.example.com"))
        #expect(try JSONDecoder().decode(RegisteredClient.self, from: stored).clientID == "client-1")

        network.settings.withLock { $0.issuer = "https://other-auth.example.com" }
        let flow = try await network.signIn(store: store).flow()
        #expect(network.registrations.withLock { $0 } == 2, "a new issuer gets a registration of its own")
        #expect(flow.endpoint.client.clientID == "client-2")
        #expect(flow.issuer == "https://other-auth.example.com")
    }

    @Test func aServerThatNoLongerKnowsTheRegisteredClientMakesTheNextSignInRegisterAgain() async throws {
        let network = ResourceNetwork()
        let store = InMemoryTokenStore()
        let authenticator = try await network.signIn(store: store).authenticator()
        let resource = URL(string: "https://api.example.com/mcp")!
        _ = try await Probe(authenticator: authenticator, url: resource).request()
        network.settings.withLock { $0.tokenError = "invalid_client" }  // the registration was deleted
        network.clock.advance(by: 120)
        await #expect(throws: AuthenticationError.self) {
            _ = try await Probe(authenticator: authenticator, url: resource).request()
        }
        #expect(try await store.load(forKey: "client-registration@https://auth.example.com") == nil)
        network.settings.withLock { $0.tokenError = nil }
        let flow = try await network.signIn(store: store).flow()
        #expect(flow.endpoint.client.clientID == "client-2", "registered again")

        // A pre-registered client is never forgotten: there is nothing to forget.
        let known = ResourceNetwork(.init(tokenError: "invalid_client"))
        let policy = ClientRegistrationPolicy(preRegistered: ["https://auth.example.com": .none(id: "known")])
        let knownStore = InMemoryTokenStore()
        let knownAuthenticator = try await known.signIn(policy: policy, store: knownStore).authenticator()
        await #expect(throws: AuthenticationError.self) {
            _ = try await Probe(authenticator: knownAuthenticator, url: resource).request()
        }
        #expect(known.registrations.withLock { $0 } == 0)
    }

    @Test func theScopeIsTheChallengesThenScopesSupportedThenNone() async throws {
        for (challengeScope, supported, expected) in [
            (nil, #"["a","b"]"#, "a b"), (nil, "[]", nil), ("c", #"["a"]"#, "c"),
        ] as [(String?, String, String?)] {
            var settings = ResourceNetwork.Settings()
            settings.challenge =
                #"Bearer resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/mcp""#
                + (challengeScope.map { #", scope="\#($0)""# } ?? "")
            settings.scopesSupported = supported
            let network = ResourceNetwork(settings)
            let flow = try await network.signIn().flow()
            #expect(flow.scope == expected)
        }
    }

    @Test func aServerWithoutS256IsRefusedBeforeRegistrationOrBrowser() async throws {
        for methods in [#"["plain"]"#, "[]"] {
            let network = ResourceNetwork(.init(challengeMethods: methods))
            let browser = ResourceNetwork.Browser(issuer: "https://auth.example.com")
            let error = await #expect(throws: ResourceDiscoveryError.self) {
                _ = try await network.signIn(browser: browser).authenticator()
            }
            #expect(error?.code == .pkceUnsupported)
            #expect(network.requests(to: "/register").isEmpty)
            #expect(browser.opened.withLock { $0.isEmpty })
        }
    }

    @Test func refusalsOfTheResourceAndItsServerSendNothingFurther() async throws {
        // Metadata for another resource.
        let mismatch = ResourceNetwork(.init(metadataResource: "https://api.example.com/other"))
        let error = await #expect(throws: ResourceDiscoveryError.self) {
            _ = try await mismatch.signIn().authenticator()
        }
        #expect(error?.code == .resourceMismatch)
        #expect(mismatch.requests(to: "/.well-known/oauth-authorization-server").isEmpty)

        // Server metadata naming another issuer.
        let issuer = ResourceNetwork(.init(metadataIssuer: "https://auth.example.com/"))
        let issuerError = await #expect(throws: ResourceDiscoveryError.self) {
            _ = try await issuer.signIn().authenticator()
        }
        #expect(issuerError?.code == .issuerMismatch)
        #expect(issuer.requests(to: "/register").isEmpty)

        // Plain http to a host that is not loopback: nothing is sent at all.
        let plain = ResourceNetwork(.init(resource: "http://api.example.com/mcp"))
        let plainError = await #expect(throws: ResourceDiscoveryError.self) {
            _ = try await plain.signIn().authenticator()
        }
        #expect(plainError?.code == .insecureURL)
        #expect(plain.requests.withLock { $0.isEmpty })
    }

    @Test func registrationRepliesThatAreNotRegistrationsAreRefusedAndNotStored() async throws {
        let replies: [(String, ClientRegistrationError.Code)] = [
            (#"{"redirect_uris":["http://127.0.0.1/callback"]}"#, .invalidResponse),
            (#"{"client_id":7}"#, .invalidResponse),
            (#"{"client_id":"x","redirect_uris":["https://evil.example/cb"]}"#, .invalidResponse),
            (#"{"client_id":"x","token_endpoint_auth_method":"client_secret_post"}"#, .invalidResponse),
            (#"{"client_id":"x","token_endpoint_auth_method":"tls_client_auth"}"#, .unsupportedAuthenticationMethod),
            (#"{"client_id":"x","registration_client_uri":"http://evil.example/r"}"#, .invalidResponse),
        ]
        for (reply, code) in replies {
            let network = ResourceNetwork(.init(registrationReply: reply))
            let store = InMemoryTokenStore()
            let error = await #expect(throws: ClientRegistrationError.self, "\(reply)") {
                _ = try await network.signIn(store: store).authenticator()
            }
            #expect(error?.code == code, "\(reply)")
            #expect(try await store.load(forKey: "client-registration@https://auth.example.com") == nil)
        }
        let large = ResourceNetwork(
            .init(registrationReply: #"{"client_id":"x","pad":""# + String(repeating: "a", count: 2 << 20) + #""}"#))
        let tooLarge = await #expect(throws: HTTPTransportError.self) { _ = try await large.signIn().authenticator() }
        #expect(tooLarge?.code == .responseTooLarge)
    }

    @Test func theMethodIsChosenFromWhatTheServerSupportsAndSecretsAreNeverShown() async throws {
        let network = ResourceNetwork(.init(authMethods: #"["client_secret_post"]"#))
        let store = InMemoryTokenStore()
        let flow = try await network.signIn(store: store).flow()
        let body = try #require(
            try JSONSerialization.jsonObject(with: network.requests(to: "/register").first?.httpBody ?? Data())
                as? [String: Any])
        #expect(body["token_endpoint_auth_method"] as? String == "client_secret_post")
        #expect(flow.endpoint.client.methodName == "client_secret_post")
        let stored = try JSONDecoder().decode(
            RegisteredClient.self,
            from: try #require(try await store.load(forKey: "client-registration@https://auth.example.com")))
        #expect(stored.clientSecret == "registered-secret-1")
        for text in [
            String(describing: stored), String(reflecting: stored), "\(flow)",
            "\(Mirror(reflecting: stored).children.map(\.value))",
        ] {
            #expect(!text.contains("registered-secret-1"), "\(text)")
        }

        let none = ResourceNetwork(.init(authMethods: #"["private_key_jwt"]"#))
        let error = await #expect(throws: ClientRegistrationError.self) { _ = try await none.signIn().authenticator() }
        #expect(error?.code == .unsupportedAuthenticationMethod)
        #expect(none.requests(to: "/register").isEmpty)
    }

    @Test func preRegisteredThenClientIDMetadataDocumentThenDynamicRegistration() async throws {
        let document = try ClientIDMetadataDocument(
            url: URL(string: "https://notes.example/oauth/client.json")!,
            metadata: ClientMetadata(clientName: "Notes", redirectURIs: [ResourceSignIn.defaultRedirectURI]))
        var policy = ClientRegistrationPolicy.dynamic(clientName: "Notes")
        policy.clientIDMetadataDocument = document

        let supported = ResourceNetwork(.init(cimdSupported: true))
        let viaDocument = try await supported.signIn(policy: policy).flow()
        #expect(viaDocument.endpoint.client.clientID == document.url.absoluteString)
        #expect(supported.registrations.withLock { $0 } == 0)

        let unsupported = ResourceNetwork(.init(cimdSupported: false))
        let viaRegistration = try await unsupported.signIn(policy: policy).flow()
        #expect(viaRegistration.endpoint.client.clientID == "client-1")

        policy.preRegistered = ["https://auth.example.com": .none(id: "known-client")]
        let known = ResourceNetwork(.init(cimdSupported: true))
        let viaKnown = try await known.signIn(policy: policy).flow()
        #expect(viaKnown.endpoint.client.clientID == "known-client")
        #expect(known.registrations.withLock { $0 } == 0)

        let nothing = ResourceNetwork()
        let error = await #expect(throws: ClientRegistrationError.self) {
            _ = try await nothing.signIn(policy: ClientRegistrationPolicy()).authenticator()
        }
        #expect(error?.code == .unavailable)
    }

    @Test func clientIDMetadataDocumentsAndClientMetadataAreCheckedBeforeUse() throws {
        let redirect = [ResourceSignIn.defaultRedirectURI]
        for bad in [
            "http://notes.example/client.json", "https://notes.example", "https://notes.example/",
            "https://notes.example/a/../client.json", "https://notes.example/client.json#x",
            "https://user@notes.example/client.json",
        ] {
            #expect(throws: ClientRegistrationError.self, "\(bad)") {
                try ClientIDMetadataDocument(
                    url: URL(string: bad)!, metadata: ClientMetadata(clientName: "N", redirectURIs: redirect))
            }
        }
        #expect(throws: ClientRegistrationError.self) {
            try ClientIDMetadataDocument(
                url: URL(string: "https://notes.example/c.json")!,
                metadata: ClientMetadata(redirectURIs: redirect, tokenEndpointAuthMethod: "client_secret_basic"))
        }
        let document = try ClientIDMetadataDocument(
            url: URL(string: "https://notes.example/c.json")!, metadata: ClientMetadata(redirectURIs: redirect))
        let published = try JSONSerialization.jsonObject(with: try document.json()) as? [String: Any]
        #expect(published?["client_id"] as? String == "https://notes.example/c.json")
        #expect(published?["redirect_uris"] as? [String] == ["http://127.0.0.1/callback"])

        for uris in [[], ["http://app.example/cb"], ["https://app.example/cb#frag"]] {
            #expect(throws: ClientRegistrationError.self, "\(uris)") {
                try ClientMetadata(redirectURIs: uris.map { URL(string: $0)! }).validate()
            }
        }
        try ClientMetadata(redirectURIs: [URL(string: "com.example.notes:/callback")!]).validate()
        #expect(throws: ClientRegistrationError.self) {
            try ClientMetadata(redirectURIs: [URL(string: "myapp:/cb")!], applicationType: .web).validate()
        }
    }

    @Test func aNonInteractiveSignInWithoutASessionIsATypedErrorThatSaysWhatIsNeeded() async throws {
        let network = ResourceNetwork()
        let authenticator = try await network.signIn(method: .nonInteractive).authenticator()
        let failure = await #expect(throws: AuthenticationError.self) {
            _ = try await Probe(
                authenticator: authenticator, url: URL(string: "https://api.example.com/mcp")!
            ).request()
        }
        let error = failure?.underlyingError as? ResourceDiscoveryError
        #expect(error?.code == .interactionRequired)
        #expect(error?.message.contains("notes:read") == true)
        #expect(network.requests(to: "/token").isEmpty)
    }
}

/// One grant for several resources, in memory: refusals before anything is signed in.
@Suite struct ResourceGrantTests {
    @Test func resourcesOfDifferentServersAreRefusedAndAGrantServesOnlyItsResources() async throws {
        let network = ResourceNetwork()
        let configuration = OAuthAuthenticator.Configuration(clock: network.clock, tokenTransport: network.transport)
        let grant = try await ResourceGrant.discover(
            resources: [URL(string: "https://api.example.com/mcp")!], registration: .dynamic(clientName: "N"),
            method: .nonInteractive, store: InMemoryTokenStore(), configuration: configuration)
        #expect(grant.issuer == "https://auth.example.com")
        let mismatch = #expect(throws: ResourceDiscoveryError.self) {
            _ = try grant.authenticator(for: URL(string: "https://api.example.com/other")!)
        }
        #expect(mismatch?.code == .resourceMismatch)
        let failure = await #expect(throws: AuthenticationError.self) {
            _ = try await Probe(
                authenticator: try grant.authenticator(for: URL(string: "https://api.example.com/mcp")!),
                url: URL(string: "https://api.example.com/mcp")!
            ).request()
        }
        #expect((failure?.underlyingError as? ResourceDiscoveryError)?.code == .interactionRequired)
        #expect(network.requests(to: "/token").isEmpty, "no sign-in, no token request")

        let empty = await #expect(throws: ResourceDiscoveryError.self) {
            _ = try await ResourceGrant.discover(
                resources: [], registration: .dynamic(clientName: "N"), method: .nonInteractive,
                store: InMemoryTokenStore(), configuration: configuration)
        }
        #expect(empty?.code == .noAuthorizationServer)
    }
}

/// What `authreq fetch` offers for an unknown resource: only metadata of the URL's own resource.
@Suite struct OfferedResourceTests {
    @Test func theMetadataOfferedIsOnlyForTheURLsOwnResource() async throws {
        let network = ResourceNetwork()
        let context = AuthenticationContext(transport: network.transport, clock: network.clock)
        let offered = try await ProtectedResourceMetadata.offered(
            by: URL(string: "https://api.example.com/mcp")!, context: context)
        #expect(offered?.resource.absoluteString == "https://api.example.com/mcp")
        #expect(network.requests.withLock { $0.allSatisfy { $0.value(forHTTPHeaderField: "Authorization") == nil } })

        let elsewhere = ResourceNetwork(.init(metadataResource: "https://other.example.com/mcp"))
        let none = try await ProtectedResourceMetadata.offered(
            by: URL(string: "https://api.example.com/mcp")!,
            context: AuthenticationContext(transport: elsewhere.transport, clock: elsewhere.clock))
        #expect(none == nil, "metadata of another origin is not offered")
    }

    // MARK: Machine sign-ins (MCP's workload identity federation)

    /// An unsigned JWT naming `subject`, valid for ten minutes (the in-memory server does not
    /// verify it; the client reads only `exp`).
    static func workloadToken(_ subject: String, clock: TestClock) -> String {
        let exp = Int(clock.now.timeIntervalSince1970) + 600
        let payload = Base64URL.encode(
            Data(#"{"iss":"https://k8s.example.com","sub":"\#(subject)","exp":\#(exp)}"#.utf8))
        return Base64URL.encode(Data(#"{"alg":"RS256"}"#.utf8)) + ".\(payload).c2ln"
    }

    @Test func aWorkloadSignsInWithItsTokenFileAndGrantsAgainWithTheRotatedOneAtExpiry() async throws {
        var settings = ResourceNetwork.Settings()
        settings.issuesRefreshTokens = false
        let network = ResourceNetwork(settings)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("workload-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Self.workloadToken("first", clock: network.clock).write(to: file, atomically: true, encoding: .utf8)
        let browser = ResourceNetwork.Browser(issuer: "https://auth.example.com")
        let signIn = network.signIn(
            method: .jwtBearer(.file(file)),
            policy: ClientRegistrationPolicy(preRegistered: ["https://auth.example.com": .none(id: "workload")]),
            browser: browser)
        let authenticator = try await signIn.authenticator()
        let resource = URL(string: "https://api.example.com/mcp")!
        _ = try await Probe(authenticator: authenticator, url: resource).request()

        let paths = network.requests.withLock { $0.map { $0.url?.path ?? "" } }
        #expect(
            paths == [
                "/mcp", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server",
                "/token", "/mcp",
            ], "no registration, no browser")
        #expect(browser.opened.withLock { $0.isEmpty })
        let grant = ResourceNetwork.form(try #require(network.requests(to: "/token").first))
        #expect(grant.contains { $0 == ("grant_type", JWTBearerFlow.grantType) })
        #expect(grant.contains { $0 == ("assertion", Self.workloadToken("first", clock: network.clock)) })
        #expect(grant.contains { $0 == ("resource", resource.absoluteString) })
        #expect(grant.contains { $0 == ("scope", "notes:read") }, "the challenge's scope")

        // The platform rotates the token; at expiry (no refresh token) the grant runs again.
        let second = Self.workloadToken("second", clock: network.clock)
        try second.write(to: file, atomically: true, encoding: .utf8)
        network.clock.advance(by: 120)
        _ = try await Probe(authenticator: authenticator, url: resource).request()
        let again = ResourceNetwork.form(try #require(network.requests(to: "/token").last))
        #expect(network.requests(to: "/token").count == 2)
        #expect(again.contains { $0 == ("grant_type", JWTBearerFlow.grantType) })
        #expect(again.contains { $0 == ("assertion", second) })
        #expect(again.contains { $0 == ("resource", resource.absoluteString) })
    }

    @Test func anEnterpriseManagedSignInExchangesTheIDTokenThenPresentsTheIDJAG() async throws {
        let network = ResourceNetwork()
        let session = OAuthAuthenticator(
            flow: FixedSessionFlow(idToken: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.id-token-1"),
            configuration: .init(clock: network.clock))
        let browser = ResourceNetwork.Browser(issuer: "https://auth.example.com")
        let signIn = network.signIn(
            method: .enterpriseManaged(
                IdentityAssertionGrant(
                    tokenEndpoint: URL(string: "https://login.example.com/token")!,
                    client: .clientSecretBasic(id: "agent-at-idp", secret: "s3cret-idp"), subject: .idToken(of: session)
                )),
            policy: ClientRegistrationPolicy(
                preRegistered: ["https://auth.example.com": .clientSecretBasic(id: "agent", secret: "s3cret-as")]),
            browser: browser)
        let resource = URL(string: "https://api.example.com/mcp")!
        _ = try await Probe(authenticator: try await signIn.authenticator(), url: resource).request()

        let paths = network.requests.withLock { $0.map { $0.url?.host.map { "\($0)" } ?? "" } }
        #expect(browser.opened.withLock { $0.isEmpty }, "no browser")
        #expect(!paths.contains("auth.example.com/register"))
        let exchange = ResourceNetwork.form(try #require(network.requests(to: "/token").first))
        #expect(network.requests(to: "/token").first?.url?.host == "login.example.com")
        #expect(exchange.contains { $0 == ("subject_token", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.id-token-1") })
        #expect(exchange.contains { $0 == ("audience", "https://auth.example.com") }, "the discovered issuer")
        #expect(exchange.contains { $0 == ("resource", resource.absoluteString) })
        #expect(exchange.contains { $0 == ("requested_token_type", "urn:ietf:params:oauth:token-type:id-jag") })
        let grant = ResourceNetwork.form(try #require(network.requests(to: "/token").last))
        #expect(network.requests(to: "/token").last?.url?.host == "auth.example.com")
        #expect(grant.contains { $0 == ("grant_type", JWTBearerFlow.grantType) })
        #expect(grant.contains { $0.0 == "assertion" && $0.1.contains(".jag-") })
        #expect(grant.contains { $0 == ("resource", resource.absoluteString) })
        #expect(grant.contains { $0 == ("scope", "notes:read") }, "the challenge's scope")

        // A step-up to an authentication level ends at once: the chain cannot give one.
        let flow = try await signIn.flow()
        let before = network.requests.withLock { $0.count }
        let error = await #expect(throws: StepUpError.self) {
            try await flow.stepUp(
                OAuthToken(accessToken: "at"),
                to: StepUpRequirement(reason: .insufficientUserAuthentication, acrValues: ["phr"]),
                for: AuthenticationContext(transport: network.transport, clock: network.clock))
        }
        #expect(error?.code == .interactionRequired)
        #expect(network.requests.withLock { $0.count } == before, "nothing was sent")
    }

    @Test(arguments: [
        StepUpRequirement(reason: .insufficientUserAuthentication, acrValues: ["phr"]),
        StepUpRequirement(reason: .insufficientUserAuthentication, maxAge: 300),
    ])
    func aMachineSignInAskedForAPersonsAuthenticationFailsAtOnce(requirement: StepUpRequirement) async throws {
        let network = ResourceNetwork()
        let signIn = network.signIn(
            method: .clientCredentials,
            policy: ClientRegistrationPolicy(
                preRegistered: ["https://auth.example.com": .clientSecretBasic(id: "svc", secret: "s3cret")]))
        let flow = try await signIn.flow()
        let before = network.requests.withLock { $0.count }
        let token = OAuthToken(accessToken: "at", expiresAt: network.clock.now.addingTimeInterval(60))
        let context = AuthenticationContext(transport: network.transport, clock: network.clock)
        let error = await #expect(throws: StepUpError.self) {
            try await flow.stepUp(token, to: requirement, for: context)
        }
        #expect(error?.code == .interactionRequired)
        #expect(error?.requirement == requirement)
        #expect(network.requests.withLock { $0.count } == before, "nothing was sent")

        // A larger scope is something the grant can give: it asks for it.
        let scoped = try await flow.stepUp(
            token, to: StepUpRequirement(reason: .insufficientScope, scope: "notes:write"), for: context)
        #expect(scoped.accessToken.hasPrefix("at-client_credentials-"))
        let form = ResourceNetwork.form(try #require(network.requests(to: "/token").last))
        // The form's `+` is a space.
        #expect(form.contains { $0 == ("scope", "notes:read+notes:write") }, "\(form)")
    }
}

/// A session at an identity provider with a fixed ID token and an access token of an hour.
struct FixedSessionFlow: OAuthFlow {
    let idToken: String
    var storeKey: String { "agent@https://login.example.com/token" }
    func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        OAuthToken(accessToken: "session", expiresAt: context.clock.now.addingTimeInterval(3600), idToken: idToken)
    }
    func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        try await obtainToken(for: context)
    }
}
