import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

private typealias Server = TestAuthorizationServer

/// Against a real Authlib server, through the public API only.
///
/// Tests whose subject is not expiry use clients whose tokens live 60 s: with 4 s
/// tokens (the server's default before), a busy machine (the suites run in parallel, some with several processes) can take
/// long enough between a token and its use that an extra, correct refresh breaks an exact count.
@Suite(.enabled(if: Server.isConfigured, Server.notRunReason))
struct EndToEndTests {
    // MARK: Client credentials

    @Test(arguments: ["client_secret_basic", "client_secret_post"])
    func clientCredentialsWithEachAuthenticationMethod(method: String) async throws {
        let client = try await Server.makeClient(accessTokenLifetime: 60)
        let flow = ClientCredentialsFlow(
            tokenEndpoint: try Server.tokenEndpoint,
            client: method == "client_secret_basic" ? client.basic : client.post,
            scope: "profile"
        )
        let me = try await ServerMe(authenticator: Server.authenticator(flow: flow)).request()
        #expect(me.name == "Ada Lovelace")
        #expect(try await Server.tokenRequests(client) == ["client_credentials": 1])
        #expect(client.secret?.contains("&") == true, "the secret has reserved characters, and still works")
    }

    @Test func aWrongSecretIsATypedInvalidClientError() async throws {
        let client = try await Server.makeClient()
        let flow = ClientCredentialsFlow(
            tokenEndpoint: try Server.tokenEndpoint,
            client: .clientSecretBasic(id: client.id, secret: "wrong")
        )
        let error = await #expect(throws: OAuthError.self) {
            try await flow.obtainToken(for: AuthenticationContext(transport: URLSessionTransport.shared))
        }
        #expect(error?.code == .invalidClient)
        #expect(error?.statusCode == 401)
        let viaResource = await #expect(throws: AuthenticationError.self) {
            try await ServerMe(authenticator: Server.authenticator(flow: flow)).request()
        }
        #expect((viaResource?.underlyingError as? OAuthError)?.code == .invalidClient)
    }

    // MARK: Authorization code + PKCE

    @Test func authorizationCodeWithPKCEThroughTheLoopbackReceiver() async throws {
        let client = try await Server.makeClient(public: true, accessTokenLifetime: 60)
        let store = InMemoryTokenStore()
        let authenticator = Server.authenticator(store: store)
        let token = try await Server.signIn(client, into: authenticator)
        #expect(token.refreshToken != nil)
        #expect(token.scope == "profile")
        #expect(try await ServerMe(authenticator: authenticator).request().name == "Ada Lovelace")
        #expect(try await Server.tokenRequests(client) == ["authorization_code": 1])
        #expect(try await storedToken(store, key: "\(client.id)@\(try Server.tokenEndpoint.absoluteString)") != nil)
    }

    @Test func aDeniedConsentIsATypedAccessDenied() async throws {
        let client = try await Server.makeClient(public: true)
        let error = await #expect(throws: OAuthError.self) {
            try await Server.signIn(client, into: Server.authenticator(), decision: "deny")
        }
        #expect(error?.code == .accessDenied)
        #expect(try await Server.tokenRequests(client).isEmpty, "no code was exchanged")
    }

    // MARK: Expiry, revocation, rotation

    @Test func afterTheLifetimeTheNextRequestRefreshesAheadOfTimeOnce() async throws {
        // Tokens of 12 s: the refreshed one (3 s of leeway) is still valid when a loaded machine
        // sends it; with 4 s tokens (the server's default before) it once expired in flight.
        let client = try await Server.makeClient(public: true, accessTokenLifetime: 12)
        let authenticator = Server.authenticator()
        _ = try await Server.signIn(client, into: authenticator)
        _ = try await ServerMe(authenticator: authenticator).request()
        try await Task.sleep(for: .seconds(12))  // real expiry at a real server
        let events = await authenticator.events()
        #expect(try await ServerMe(authenticator: authenticator).request().name == "Ada Lovelace")
        #expect(try await Server.tokenRequests(client) == ["authorization_code": 1, "refresh_token": 1])
        var kinds: [AuthenticationEvent.Kind] = []
        for await event in events {
            kinds.append(event.kind)
            break
        }
        #expect(kinds == [.credentialRefreshed], "refreshed before the request, not after a 401")
    }

    @Test func anAccessTokenRevokedBehindTheSDKsBackIsRefreshedAndRetriedOnce() async throws {
        let client = try await Server.makeClient(public: true, accessTokenLifetime: 60)
        let authenticator = Server.authenticator()
        let token = try await Server.signIn(client, into: authenticator)
        try await RevocationEndpoint(url: try Server.revocationEndpoint, client: client.publicClient)
            .revoke(token.accessToken, hint: .accessToken, context: authenticator.context)
        let events = await authenticator.events()
        #expect(try await ServerMe(authenticator: authenticator).request().name == "Ada Lovelace")
        #expect(try await Server.tokenRequests(client)["refresh_token"] == 1)
        var kinds: [AuthenticationEvent.Kind] = []
        for await event in events {
            kinds.append(event.kind)
            if kinds.count == 2 { break }
        }
        // `requestRetried` comes when the request is sent again, after the refresh.
        #expect(kinds == [.credentialRefreshed, .requestRetried])
    }

    @Test func aRotatedRefreshTokenIsDeadAtTheServerAndTheNewOneIsStored() async throws {
        let client = try await Server.makeClient(public: true)
        let store = InMemoryTokenStore()
        let authenticator = Server.authenticator(store: store)
        let first = try await Server.signIn(client, into: authenticator)
        var expired = first
        expired.expiresAt = Date(timeIntervalSinceNow: -1)
        await authenticator.configure(
            with: RefreshTokenFlow(
                tokenEndpoint: try Server.tokenEndpoint, client: client.publicClient, refreshToken: "unused"),
            token: expired
        )
        let second = try await authenticator.validCredential()
        let key = "\(client.id)@\(try Server.tokenEndpoint.absoluteString)"
        #expect(second.refreshToken != first.refreshToken)
        #expect(try await storedToken(store, key: key)?.refreshToken == second.refreshToken)
        let old = RefreshTokenFlow(
            tokenEndpoint: try Server.tokenEndpoint,
            client: client.publicClient,
            refreshToken: try #require(first.refreshToken)
        )
        let error = await #expect(throws: OAuthError.self) { try await old.obtainToken(for: authenticator.context) }
        #expect(error?.code == .invalidGrant)
    }

    @Test func aRefreshTokenRevokedAtTheServerEndsInReauthenticationAndAClearedStore() async throws {
        let client = try await Server.makeClient(public: true)
        let store = InMemoryTokenStore()
        let authenticator = Server.authenticator(store: store)
        let token = try await Server.signIn(client, into: authenticator)
        try await RevocationEndpoint(url: try Server.revocationEndpoint, client: client.publicClient)
            .revoke(try #require(token.refreshToken), hint: .refreshToken, context: authenticator.context)
        let error = await #expect(throws: AuthenticationError.self) {
            try await ServerMe(authenticator: authenticator).request()
        }
        #expect(error?.code == .reauthenticationRequired)
        #expect((error?.underlyingError as? OAuthError)?.code == .invalidGrant)
        #expect(try await storedToken(store, key: "\(client.id)@\(try Server.tokenEndpoint.absoluteString)") == nil)
        #expect(try await authenticator.currentCredential() == nil)
    }

    @Test func twentyConcurrentRequestsWithAnExpiredTokenCauseExactlyOneRefresh() async throws {
        let client = try await Server.makeClient(public: true, accessTokenLifetime: 60)
        let authenticator = Server.authenticator()
        let token = try await Server.signIn(client, into: authenticator)
        var expired = token
        expired.expiresAt = Date(timeIntervalSinceNow: -1)
        await authenticator.setCredential(expired)
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 { group.addTask { try await ServerMe(authenticator: authenticator).request().name } }
            for try await name in group { #expect(name == "Ada Lovelace") }
        }
        #expect(try await Server.tokenRequests(client) == ["authorization_code": 1, "refresh_token": 1])
    }

    // MARK: Device authorization

    func deviceFlow(_ client: TestAuthorizationServer.Client, decision: Bool?) async throws -> DeviceAuthorizationFlow {
        try await Server.metadata().deviceAuthorizationFlow(client: client.post, scope: "profile") { authorization in
            guard let decision else { return }
            #expect(authorization.verificationURIComplete?.query?.contains(authorization.userCode) == true)
            try? await Server.decideDevice(userCode: authorization.userCode, approve: decision)
        }
    }

    @Test func deviceAuthorizationApproved() async throws {
        let client = try await Server.makeClient()
        let authenticator = Server.authenticator(flow: try await deviceFlow(client, decision: true))
        #expect(try await ServerMe(authenticator: authenticator).request().name == "Ada Lovelace")
        let counts = try await Server.tokenRequests(client)
        #expect(counts[DeviceAuthorizationFlow.grantType] == 1, "approved before the first poll: one poll")
    }

    @Test func deviceAuthorizationDenied() async throws {
        let client = try await Server.makeClient()
        let flow = try await deviceFlow(client, decision: false)
        let error = await #expect(throws: OAuthError.self) {
            try await flow.obtainToken(for: AuthenticationContext(transport: URLSessionTransport.shared))
        }
        #expect(error?.code == .accessDenied)
    }

    @Test func deviceAuthorizationExpired() async throws {
        // 10 s: the client stops polling at the code's expiry without asking (its own deadline), so
        // a loaded machine must still get its first poll (due after 1 s) out before then; 4 s failed
        // once in four full runs under load.
        let client = try await Server.makeClient(deviceCodeLifetime: 10)
        let flow = try await deviceFlow(client, decision: nil)
        let error = await #expect(throws: OAuthError.self) {
            try await flow.obtainToken(for: AuthenticationContext(transport: URLSessionTransport.shared))
        }
        #expect(error?.code == .expiredToken)
        #expect((try await Server.tokenRequests(client)[DeviceAuthorizationFlow.grantType] ?? 0) >= 1, "it polled")
    }

    // MARK: Discovery and sign-out

    @Test func discoveryFromTheMetadataURL() async throws {
        let metadata = try await Server.metadata()
        #expect(metadata.issuer == (try Server.base.absoluteString))
        #expect(metadata.tokenEndpoint == (try Server.tokenEndpoint))
        #expect(metadata.codeChallengeMethodsSupported == ["S256"])
        #expect(metadata.authorizationResponseIssParameterSupported)
        let client = try await Server.makeClient()
        let flow = try metadata.clientCredentialsFlow(client: client.basic)
        #expect(try await ServerMe(authenticator: Server.authenticator(flow: flow)).request().name == "Ada Lovelace")
    }

    @Test func signOutRevokesTheTokensAndClearsTheStore() async throws {
        let client = try await Server.makeClient(public: true)
        let store = InMemoryTokenStore()
        let authenticator = Server.authenticator(store: store)
        let token = try await Server.signIn(client, into: authenticator)
        try await authenticator.signOut(
            revokingAt: try await Server.metadata().revocationEndpoint(client: client.publicClient))
        #expect(try await authenticator.currentCredential() == nil)
        #expect(try await storedToken(store, key: "\(client.id)@\(try Server.tokenEndpoint.absoluteString)") == nil)
        // The revoked access token is refused by the resource server.
        let stale = OAuthAuthenticator(
            flow: RefreshTokenFlow(
                tokenEndpoint: try Server.tokenEndpoint, client: client.publicClient,
                refreshToken: token.refreshToken ?? ""),
            token: token,
            configuration: .init(leeway: 1)
        )
        let error = await #expect(throws: AuthenticationError.self) {
            try await ServerMe(authenticator: stale).request()
        }
        #expect(error?.code == .reauthenticationRequired, "401, then the revoked refresh token gets invalid_grant")
    }
}
