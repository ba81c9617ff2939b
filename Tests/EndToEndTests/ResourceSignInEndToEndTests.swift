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

/// A protected resource of the Authlib test server, `/rs/<tag>`: it accepts only tokens issued
/// for exactly its URL, and answers others with a 401 naming its RFC 9728 metadata.
struct TestResource: AuthenticatedResource {
    struct Output: Decodable, Sendable {
        let resource: String
        let path: String
        let client_id: String
    }
    let authenticator: any RequestAuthenticator
    let url: URL

    func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }

    /// A new resource of its own on the test server; with `tokenLifetime`, the server issues
    /// its tokens for that many seconds instead of its default 4.
    static func make(tokenLifetime: Int? = nil) throws -> URL {
        let name = UUID().uuidString.prefix(8).lowercased() + (tokenLifetime.map { "-ttl\($0)" } ?? "")
        return try TestAuthorizationServer.base.appendingPathComponent("rs/\(name)")
    }
}

/// Signing in from nothing but a resource's URL, against the Authlib test server: discovery from
/// the 401, dynamic registration stored under the issuer, a browser sign-in for the resource.
@Suite(.enabled(if: TestAuthorizationServer.isConfigured, TestAuthorizationServer.notRunReason))
struct ResourceSignInEndToEndTests {
    let configuration = OAuthAuthenticator.Configuration(allowsInsecureHTTP: true)

    func signIn(_ resource: URL, name: String, store: any TokenStore, browser: BrowserSimulator) -> ResourceSignIn {
        ResourceSignIn(
            resource: resource,
            registration: .dynamic(clientName: name),
            method: .browser(LoopbackUserAgent(opener: browser, timeout: 30)),
            store: store,
            configuration: configuration)
    }

    @Test func fromTheURLAloneThenASecondLaunchReusesTheRegistrationAndTheSession() async throws {
        let resource = try TestResource.make()
        let name = "e2e-\(UUID().uuidString)"
        let store = InMemoryTokenStore()
        let browser = BrowserSimulator()

        let authenticator = try await signIn(resource, name: name, store: store, browser: browser).authenticator()
        let first = try await TestResource(authenticator: authenticator, url: resource).request()
        #expect(first.resource == resource.absoluteString)
        #expect(browser.openedURLs.withLock { $0.count } == 1)
        let opened = try #require(browser.openedURLs.withLock { $0.first })
        let query = URLComponents(url: opened, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "resource" }?.value == resource.absoluteString)
        #expect(query.first { $0.name == "code_challenge_method" }?.value == "S256")
        #expect(query.first { $0.name == "scope" }?.value == "profile", "the metadata's scopes_supported")

        let registrations = try await TestAuthorizationServer.json("test/stats/registered:\(name)")
        #expect(registrations["register"] as? Int == 1)
        #expect(registrations["application_type:native"] as? Int == 1)
        let grants = try await TestAuthorizationServer.json("test/stats/resource:\(resource.absoluteString)")
        #expect(grants["authorization_code"] as? Int == 1, "the code exchange names the resource")

        // The next launch: the same store, nothing else.
        let again = try await signIn(resource, name: name, store: store, browser: browser).authenticator()
        let second = try await TestResource(authenticator: again, url: resource).request()
        #expect(second.client_id == first.client_id)
        #expect(browser.openedURLs.withLock { $0.count } == 1, "no new sign-in")
        let after = try await TestAuthorizationServer.json("test/stats/registered:\(name)")
        #expect(after["register"] as? Int == 1, "no new registration")
    }

    @Test func concurrentSignInsInOneProcessRegisterOnce() async throws {
        let resource = try TestResource.make()
        let name = "e2e-\(UUID().uuidString)"
        let store = InMemoryTokenStore()
        let shared = signIn(resource, name: name, store: store, browser: BrowserSimulator())
        let clients = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    let authenticator = try await shared.authenticator()
                    return try await TestResource(authenticator: authenticator, url: resource).request().client_id
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(clients.count == 1)
        let registrations = try await TestAuthorizationServer.json("test/stats/registered:\(name)")
        #expect(registrations["register"] as? Int == 1)
    }

    @Test func aClientIDMetadataDocumentIsUsedWhenTheServerSupportsItAndNothingIsRegistered() async throws {
        let resource = try TestResource.make()
        let tag = resource.lastPathComponent
        let base = try #require(try await TestAuthorizationServer.json("test/cimd-base")["base"] as? String)
        let document = try ClientIDMetadataDocument(
            url: try #require(URL(string: "\(base)/cimd/\(tag).json")),
            metadata: ClientMetadata(clientName: "CIMD \(tag)", redirectURIs: [ResourceSignIn.defaultRedirectURI]))
        let published = try JSONSerialization.jsonObject(with: try document.json())
        _ = try await TestAuthorizationServer.json(
            "test/cimd", method: "POST", body: ["name": tag, "document": published])

        let name = "e2e-\(UUID().uuidString)"
        var policy = ClientRegistrationPolicy.dynamic(clientName: name)
        policy.clientIDMetadataDocument = document
        let signIn = ResourceSignIn(
            resource: resource, registration: policy,
            method: .browser(LoopbackUserAgent(opener: BrowserSimulator(), timeout: 30)), store: InMemoryTokenStore(),
            configuration: configuration)
        let reply = try await TestResource(authenticator: try await signIn.authenticator(), url: resource).request()
        #expect(reply.client_id == document.url.absoluteString, "the document's URL is the client id")
        let fetched = try await TestAuthorizationServer.json("test/stats/cimd:\(document.url.absoluteString)")
        #expect((fetched["fetched"] as? Int ?? 0) >= 1, "the server fetched and accepted the document")
        #expect(fetched["refused"] == nil)
        #expect(try await TestAuthorizationServer.json("test/stats/registered:\(name)")["register"] == nil)
    }

    @Test func aTokenForAnotherResourceIsNeverSentThereAndTheResourceWouldRefuseIt() async throws {
        let (one, other) = (try TestResource.make(), try TestResource.make())
        let store = InMemoryTokenStore()
        let authenticator = try await signIn(
            one, name: "e2e-\(UUID().uuidString)", store: store, browser: BrowserSimulator()
        )
        .authenticator()
        _ = try await TestResource(authenticator: authenticator, url: one).request()
        let stats = "test/stats/resource:\(one.absoluteString)"
        let tokenRequests = try await TestAuthorizationServer.json(stats)
        // The authenticator of `one` sends nothing to `other`: no request, no refresh.
        let error = await #expect(throws: AuthenticationError.self) {
            _ = try await TestResource(authenticator: authenticator, url: other).request()
        }
        #expect(error?.code == .foreignResource)
        #expect(
            try await TestAuthorizationServer.json(stats) as NSDictionary == tokenRequests as NSDictionary,
            "no token request either")
        // And the test server's audience check is real: the token of `one`, sent by hand, does not
        // open `other`.
        var byHand = URLRequest(url: other)
        let token = try #require(try await authenticator.currentCredential())
        byHand.setValue("Bearer \(token.accessToken)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSessionTransport().send(byHand)
        #expect(response.statusCode == 401)
    }
}

/// Step-up against the Authlib test server: more scope, a stronger sign-in (RFC 9470), the
/// refusal that ends it, and the headless case.
@Suite(.enabled(if: TestAuthorizationServer.isConfigured, TestAuthorizationServer.notRunReason))
struct StepUpEndToEndTests {
    struct Reply: Decodable {
        let scope: String
        let acr: String?
    }

    struct Call: AuthenticatedResource {
        typealias Output = Reply
        let authenticator: any RequestAuthenticator
        let url: URL
        func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
    }

    func authorizations(_ resource: URL) async throws -> [String: Int] {
        try await TestAuthorizationServer.json("test/stats/authorize:\(resource.absoluteString)")
            .compactMapValues { $0 as? Int }
    }

    func signedIn(_ store: any TokenStore, _ resource: URL, method: ResourceSignIn.Method? = nil) async throws
        -> OAuthAuthenticator
    {
        let signIn = ResourceSignIn(
            resource: resource, registration: .dynamic(clientName: "step-up-\(UUID().uuidString)"),
            method: method ?? .browser(LoopbackUserAgent(opener: BrowserSimulator(), timeout: 30)), store: store,
            configuration: OAuthAuthenticator.Configuration(allowsInsecureHTTP: true))
        return try await signIn.authenticator()
    }

    @Test func concurrentRequestsThatNeedMoreScopeCauseOneReauthorizationThenSucceed() async throws {
        let resource = try TestResource.make()
        let authenticator = try await signedIn(InMemoryTokenStore(), resource)
        _ = try await Call(authenticator: authenticator, url: resource).request()
        #expect(try await authorizations(resource)["requests"] == 1)

        let admin = resource.appendingPathComponent("admin")
        let scopes = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<6 {
                group.addTask { try await Call(authenticator: authenticator, url: admin).request().scope }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(scopes.count == 6)
        #expect(scopes.allSatisfy { $0.split(separator: " ").sorted() == ["admin", "profile"] }, "\(scopes)")
        #expect(try await authorizations(resource)["requests"] == 2, "six requests, one re-authorization")
    }

    @Test func aSecondRefusalAfterTheStepUpIsATypedErrorNotALoop() async throws {
        let resource = try TestResource.make()
        let authenticator = try await signedIn(InMemoryTokenStore(), resource)
        let error = await #expect(throws: StepUpError.self) {
            _ = try await Call(authenticator: authenticator, url: resource.appendingPathComponent("unreachable"))
                .request()
        }
        #expect(error?.code == .refusedAfterStepUp)
        #expect(error?.requirement.scope == "profile")
        #expect(try await authorizations(resource)["requests"] == 2, "the sign-in and one step-up, no more")
    }

    @Test func insufficientUserAuthenticationSignsInAgainWithTheAcrAndMaxAgeAskedFor() async throws {
        let resource = try TestResource.make()
        let authenticator = try await signedIn(InMemoryTokenStore(), resource)
        let reply = try await Call(authenticator: authenticator, url: resource.appendingPathComponent("mfa")).request()
        #expect(reply.acr == "urn:test:mfa")
        let counts = try await authorizations(resource)
        #expect(counts["requests"] == 2)
        #expect(counts["acr_values:urn:test:mfa"] == 1)
    }

    @Test func aHeadlessClientGetsATypedErrorThatCarriesTheRequirementAndNoBrowser() async throws {
        let resource = try TestResource.make()
        let store = InMemoryTokenStore()
        let browser = BrowserSimulator()
        let interactive = try await signedIn(store, resource, method: .browser(LoopbackUserAgent(opener: browser)))
        _ = try await Call(authenticator: interactive, url: resource).request()

        let headless = try await ResourceSignIn(
            resource: resource,
            registrar: ClientRegistrar(
                policy: .dynamic(clientName: "unused"), store: store,
                context: AuthenticationContext(transport: URLSessionTransport.shared, allowsInsecureHTTP: true)),
            method: .nonInteractive, store: store,
            configuration: OAuthAuthenticator.Configuration(allowsInsecureHTTP: true)
        ).authenticator()
        let error = await #expect(throws: StepUpError.self) {
            _ = try await Call(authenticator: headless, url: resource.appendingPathComponent("admin")).request()
        }
        #expect(error?.code == .interactionRequired)
        #expect(error?.requirement.scope == "admin")
        #expect(browser.openedURLs.withLock { $0.count } == 1, "only the first sign-in")
    }
}

/// The same path against idpyoidc 5.0.0, a second, independent server: discovery falls back to
/// its OpenID configuration (it publishes no RFC 8414 document), and its registration endpoint
/// offers no `none`, so the client registers with `client_secret_basic`.
@Suite(.enabled(if: IdpyoidcProvider.plain.isConfigured, IdpyoidcProvider.plain.notRunReason))
struct ResourceSignInIdpyoidcEndToEndTests {
    struct Reply: Decodable {
        let resource: String
        let client_id: String
    }

    struct Call: AuthenticatedResource {
        typealias Output = Reply
        let authenticator: any RequestAuthenticator
        let url: URL
        func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
    }

    @Test func dynamicRegistrationThenSignInThenASecondLaunchReusesBoth() async throws {
        let resource = try IdpyoidcProvider.plain.base.appendingPathComponent("rs/\(UUID().uuidString.prefix(8))")
        let name = "idpyoidc-\(UUID().uuidString)"
        let store = InMemoryTokenStore()
        let browser = CookieBrowser()
        func signIn() -> ResourceSignIn {
            ResourceSignIn(
                resource: resource, registration: .dynamic(clientName: name),
                method: .browser(LoopbackUserAgent(opener: browser, timeout: 30)), store: store,
                configuration: OAuthAuthenticator.Configuration(allowsInsecureHTTP: true))
        }
        let flow = try await signIn().flow()
        #expect(flow.endpoint.client.methodName == "client_secret_basic", "the server offers no none")
        let authenticator = OAuthAuthenticator(
            flow: flow, store: store, configuration: OAuthAuthenticator.Configuration(allowsInsecureHTTP: true))
        let reply = try await Call(authenticator: authenticator, url: resource).request()
        #expect(reply.resource == resource.absoluteString)

        let stats = try await IdpyoidcProvider.plain.json("test/stats/registered:\(name)")
        #expect(stats["register"] as? Int == 1)
        #expect(stats["application_type:native"] as? Int == 1)

        let again = try await signIn().authenticator()
        #expect(try await Call(authenticator: again, url: resource).request().resource == resource.absoluteString)
        let after = try await IdpyoidcProvider.plain.json("test/stats/registered:\(name)")
        #expect(after["register"] as? Int == 1, "the second launch registers nothing")
        let grants = try await IdpyoidcProvider.plain.json("test/stats/\(flow.endpoint.client.clientID)")
        #expect(grants["authorization_code"] as? Int == 1, "and signs in no more")
    }
}

/// One sign-in, many resources, against the Authlib test server: one browser sign-in for three
/// resources, three tokens each for one resource, and at expiry four processes that share the
/// grant make exactly one refresh per resource, with rotation and reuse detection on.
@Suite(.enabled(if: TestAuthorizationServer.isConfigured, TestAuthorizationServer.notRunReason))
struct ResourceGrantEndToEndTests {
    func grants(for resource: URL) async throws -> [String: Int] {
        try await TestAuthorizationServer.json("test/stats/resource:\(resource.absoluteString)")
            .compactMapValues { $0 as? Int }
    }

    @Test func oneSignInThreeAudienceBoundTokensThenFourProcessesRefreshOncePerResource() async throws {
        // Tokens of 8 s (refreshed 2 s ahead): the four processes have a window of ~6 s to share one
        // refresh per resource, wide enough for a loaded machine.
        let client = try await TestAuthorizationServer.makeClient(
            public: true, reuseDetection: true, accessTokenLifetime: 8)
        let issuer = try TestAuthorizationServer.base.absoluteString
        let resources = try (0..<3).map { _ in try TestResource.make() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("grant-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = FileTokenStore(directory: folder)
        let browser = BrowserSimulator()
        let grant = try await ResourceGrant.discover(
            resources: resources, registration: ClientRegistrationPolicy(preRegistered: [issuer: client.publicClient]),
            method: .browser(LoopbackUserAgent(opener: browser, timeout: 30)), store: store,
            configuration: OAuthAuthenticator.Configuration(allowsInsecureHTTP: true))

        var tokens: Set<String> = []
        for resource in resources {
            let authenticator = try grant.authenticator(for: resource)
            let reply = try await TestResource(authenticator: authenticator, url: resource).request()
            #expect(reply.resource == resource.absoluteString)
            tokens.insert(try #require(try await authenticator.currentCredential()?.accessToken))
        }
        #expect(tokens.count == 3, "a token of its own for each resource")
        #expect(browser.openedURLs.withLock { $0.count } == 1, "one sign-in")
        let opened = try #require(browser.openedURLs.withLock { $0.first })
        let named = (URLComponents(url: opened, resolvingAgainstBaseURL: false)?.queryItems ?? [])
            .filter { $0.name == "resource" }.compactMap(\.value)
        #expect(Set(named) == Set(resources.map(\.absoluteString)), "the sign-in names every resource")
        #expect(try await grants(for: resources[0])["authorization_code"] == 1)
        for resource in resources.dropFirst() { #expect(try await grants(for: resource)["refresh_token"] == 1) }
        let before = try await resources.asyncMap { try await grants(for: $0)["refresh_token"] ?? 0 }

        try await Task.sleep(for: .seconds(9))  // all three expire
        let runs = (0..<4).map { _ in
            Task {
                try await TestHelperProcess.run(
                    ["grant-requests", folder.path, client.id, "5"] + resources.map(\.absoluteString))
            }
        }
        for run in runs {
            let outcome = try await run.value
            #expect(outcome.status == 0, "\(outcome.output)")
            #expect(outcome.json?["successes"] as? Int == 15, "\(outcome.output)")
        }
        let after = try await resources.asyncMap { try await grants(for: $0)["refresh_token"] ?? 0 }
        #expect(zip(before, after).allSatisfy { $1 == $0 + 1 }, "one refresh per resource: \(before) → \(after)")
        let stats = try await TestAuthorizationServer.tokenRequests(client)
        #expect(stats["invalid_grant"] == nil, "no rotated-out refresh token was presented")
        #expect(stats["reuse_detected"] == nil)
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
