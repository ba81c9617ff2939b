import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An app relaunched without a network knows it is signed in: the metadata is kept with the
/// session, and whether the session can go on is judged locally.
@Suite struct OfflineRestoreTests {
    let clock = TestClock()
    let store = InMemoryTokenStore()
    let issuer = URL(string: "https://auth.example.com")!
    let discoveries = Locked(0)

    /// A server that serves its metadata, or a network that is down.
    func context(online: Bool) -> AuthenticationContext {
        let issuer = self.issuer
        let discoveries = self.discoveries
        return AuthenticationContext(
            transport: InMemoryTransport { request in
                guard online else { throw URLError(.notConnectedToInternet) }
                discoveries.withLock { $0 += 1 }
                return try InMemoryTransport.reply(
                    to: request,
                    json: #"{"issuer":"\#(issuer.absoluteString)","token_endpoint":"\#(issuer.absoluteString)/token"}"#)
            }, clock: clock)
    }

    @Test func metadataIsCodableAsItsDocument() throws {
        let metadata = try AuthorizationServerMetadata(fields: [
            "issuer": .string("https://auth.example.com"), "token_endpoint": .string("https://auth.example.com/t"),
            "scopes_supported": .array([.string("read")]),
        ])
        let decoded = try JSONDecoder().decode(
            AuthorizationServerMetadata.self, from: try JSONEncoder().encode(metadata))
        #expect(decoded.fields == metadata.fields)
        #expect(decoded.tokenEndpoint == metadata.tokenEndpoint)
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(AuthorizationServerMetadata.self, from: Data("[]".utf8))
        }
    }

    @Test func aRelaunchWithoutNetworkRestoresTheSessionFromStoredMetadata() async throws {
        // First launch, online: discover (stored with the sessions) and sign in.
        let metadata = try await AuthorizationServerMetadata.discover(
            issuer: issuer, cachingIn: store, context: context(online: true))
        let client = ClientAuthentication.none(id: "app")
        let endpoint = try #require(metadata.tokenEndpoint)
        let signedIn = OAuthAuthenticator(
            flow: StoredSessionFlow(tokenEndpoint: endpoint, client: client), store: store,
            configuration: .init(clock: clock))
        await signedIn.setCredential(
            OAuthToken(accessToken: "at", expiresAt: clock.now.addingTimeInterval(600), refreshToken: "rt"))
        #expect(discoveries.withLock { $0 } == 1)

        // Within a day: no request at all.
        _ = try await AuthorizationServerMetadata.discover(
            issuer: issuer, cachingIn: store, context: context(online: true))
        #expect(discoveries.withLock { $0 } == 1)

        // Two days later, offline: the stored copy, and the session with it.
        clock.advance(by: 2 * 24 * 3600)
        let offline = try await AuthorizationServerMetadata.discover(
            issuer: issuer, cachingIn: store, context: context(online: false))
        let restored = try #require(
            try await OAuthAuthenticator.restore(
                metadata: offline, client: client, store: store, configuration: .init(clock: clock)))
        #expect(await restored.canRenew(), "expired, but it has a refresh token and a flow")
    }

    @Test func withoutAStoredCopyOfflineDiscoveryFailsTyped() async throws {
        await #expect(throws: (any Error).self) {
            try await AuthorizationServerMetadata.discover(
                issuer: issuer, cachingIn: store, context: context(online: false))
        }
    }

    @Test func canRenewIsJudgedLocally() async throws {
        let flow = StoredSessionFlow(tokenEndpoint: issuer.appendingPathComponent("token"), client: .none(id: "a"))
        let authenticator = OAuthAuthenticator(flow: flow, store: store, configuration: .init(clock: clock))
        #expect(await authenticator.canRenew() == false, "no session")
        await authenticator.setCredential(OAuthToken(accessToken: "at", expiresAt: clock.now.addingTimeInterval(60)))
        #expect(await authenticator.canRenew(), "a valid access token")
        clock.advance(by: 120)
        #expect(await authenticator.canRenew() == false, "expired, and no refresh token")
        await authenticator.setCredential(
            OAuthToken(accessToken: "at", expiresAt: clock.now.addingTimeInterval(-1), refreshToken: "rt"))
        #expect(await authenticator.canRenew())
        let withoutFlow = OAuthAuthenticator(store: InMemoryTokenStore(), configuration: .init(clock: clock))
        await withoutFlow.setCredential(
            OAuthToken(accessToken: "at", expiresAt: clock.now.addingTimeInterval(-1), refreshToken: "rt"))
        #expect(await withoutFlow.canRenew() == false, "a refresh token but no flow to use it")
    }
}
