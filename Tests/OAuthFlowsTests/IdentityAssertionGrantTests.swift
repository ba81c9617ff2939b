import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The enterprise half of Enterprise-Managed Authorization: an ID-JAG asked from the identity
/// provider for every grant, with the session's current ID token, refreshed first when it has
/// expired, and a reply that is not an ID-JAG never presented.
@Suite struct IdentityAssertionGrantTests {
    let clock = TestClock()
    let server = TokenServer()
    var context: AuthenticationContext { server.context(clock: clock) }
    let idp = URL(string: "https://login.example.com/token")!
    let resource = URL(string: "https://tools.example.com/mcp")!

    /// An OpenID session's flow: access tokens of an hour, ID tokens of `idTokenLifetime` seconds
    /// (unsigned: nothing here verifies them), each refresh a new pair.
    final class SessionFlow: OAuthFlow {
        let storeKey = "agent@https://login.example.com/token"
        let idTokenLifetime: TimeInterval
        let refreshes = Locked(0)
        init(idTokenLifetime: TimeInterval) { self.idTokenLifetime = idTokenLifetime }

        func token(number: Int, at now: Date) -> OAuthToken {
            let claims =
                #"{"iss":"https://login.example.com","sub":"alice","n":\#(number),"iat":\#(Int(now.timeIntervalSince1970)),"exp":\#(Int(now.timeIntervalSince1970 + idTokenLifetime))}"#
            let idToken = "eyJhbGciOiJub25lIn0." + Base64URL.encode(Data(claims.utf8)) + ".sig"
            return OAuthToken(
                accessToken: "session-access-\(number)", expiresAt: now.addingTimeInterval(3600),
                refreshToken: "session-refresh", idToken: idToken, issuedAt: now)
        }
        func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
            token(number: 0, at: context.clock.now)
        }
        func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
            let number = refreshes.withLock { count -> Int in
                count += 1
                return count
            }
            return self.token(number: number, at: context.clock.now)
        }
    }

    func idJAG(_ type: String = "urn:ietf:params:oauth:token-type:id-jag") -> String {
        #"{"access_token":"eyJ0eXAiOiJvYXV0aC1pZC1qYWcrand0In0.e30.jag-\#(UUID().uuidString.prefix(6))","issued_token_type":"\#(type)","token_type":"N_A","expires_in":300}"#
    }

    func session(idTokenLifetime: TimeInterval) async throws -> (OAuthAuthenticator, SessionFlow) {
        let flow = SessionFlow(idTokenLifetime: idTokenLifetime)
        let session = OAuthAuthenticator(flow: flow, configuration: .init(clock: clock))
        _ = try await session.validCredential()
        return (session, flow)
    }

    @Test func theExchangeAsksForAnIDJAGForTheAudienceAndResourceWithTheSessionsIDToken() async throws {
        let (session, _) = try await session(idTokenLifetime: 300)
        let grant = IdentityAssertionGrant(
            tokenEndpoint: idp, client: .clientSecretBasic(id: "agent-at-idp", secret: "s3cret-idp-1"),
            subject: .idToken(of: session))
        server.reply(json: idJAG())
        let assertion = try await grant.assertion(
            audience: "https://auth.tools.example.com", resource: resource, scope: "tools:read"
        ).assertion(for: context)
        #expect(assertion.contains(".jag-"))
        let sent = try #require(server.requests.first)
        #expect(sent.request.url == idp)
        #expect(sent.form["grant_type"] == TokenExchangeFlow.grantType)
        #expect(sent.form["subject_token_type"] == "urn:ietf:params:oauth:token-type:id_token")
        #expect(sent.form["subject_token"] == (try await session.currentCredential())?.idToken)
        #expect(sent.form["requested_token_type"] == "urn:ietf:params:oauth:token-type:id-jag")
        #expect(sent.form["audience"] == "https://auth.tools.example.com")
        #expect(sent.form["resource"] == resource.absoluteString)
        #expect(sent.form["scope"] == "tools:read")
    }

    @Test func everyGrantAsksForANewIDJAG() async throws {
        let (session, _) = try await session(idTokenLifetime: 300)
        let source = IdentityAssertionGrant(
            tokenEndpoint: idp, client: .none(id: "agent"), subject: .idToken(of: session)
        )
        .assertion(audience: "https://auth.tools.example.com", resource: resource)
        server.reply(json: idJAG())
        server.reply(json: idJAG())
        let first = try await source.assertion(for: context)
        let second = try await source.assertion(for: context)
        #expect(first != second && server.requests.count == 2)
    }

    @Test func anExpiredIDTokenIsRefreshedAtTheProviderBeforeTheExchange() async throws {
        // The access token lives an hour; the ID token 60 s.
        let (session, flow) = try await session(idTokenLifetime: 60)
        let before = try #require(try await session.currentCredential()?.idToken)
        clock.advance(by: 120)
        let grant = IdentityAssertionGrant(
            tokenEndpoint: idp, client: .none(id: "agent"), subject: .idToken(of: session))
        server.reply(json: idJAG())
        _ = try await grant.assertion(audience: "https://auth.tools.example.com", resource: resource).assertion(
            for: context)
        #expect(flow.refreshes.withLock { $0 } == 1, "one refresh at the provider")
        let presented = try #require(server.requests.first?.form["subject_token"])
        #expect(presented != before, "the new ID token was presented")
        #expect(presented == (try await session.currentCredential())?.idToken)

        // A valid ID token is presented as it is.
        server.reply(json: idJAG())
        _ = try await grant.assertion(audience: "https://auth.tools.example.com", resource: resource).assertion(
            for: context)
        #expect(flow.refreshes.withLock { $0 } == 1)
    }

    @Test func aProviderWhoseRefreshedIDTokensAreExpiredEndsInExcessiveRefresh() async throws {
        // ID tokens that expire the moment they are issued: never fit to present.
        let (session, flow) = try await session(idTokenLifetime: 0)
        let grant = IdentityAssertionGrant(
            tokenEndpoint: idp, client: .none(id: "agent"), subject: .idToken(of: session))
        let error = await #expect(throws: AuthenticationError.self) {
            try await grant.assertion(audience: "https://auth.tools.example.com", resource: resource).assertion(
                for: context)
        }
        #expect(error?.code == .excessiveRefresh, "\(String(describing: error))")
        #expect(flow.refreshes.withLock { $0 } <= RefreshLimit().maximumCount, "bounded")
        #expect(server.requests.isEmpty, "nothing was exchanged")
    }

    @Test func aReplyThatIsNotAnIDJAGIsNotPresented() async throws {
        let (session, _) = try await session(idTokenLifetime: 300)
        let source = IdentityAssertionGrant(
            tokenEndpoint: idp, client: .none(id: "agent"), subject: .idToken(of: session)
        )
        .assertion(audience: "https://auth.tools.example.com", resource: resource)
        server.reply(json: idJAG("urn:ietf:params:oauth:token-type:access_token"))
        let error = await #expect(throws: TokenEndpointError.self) { try await source.assertion(for: context) }
        #expect(error?.field == "issued_token_type")
    }

    @Test func theDescriptionNamesNoToken() async throws {
        let (session, _) = try await session(idTokenLifetime: 300)
        let grant = IdentityAssertionGrant(
            tokenEndpoint: idp, client: .clientSecretBasic(id: "agent", secret: "s3cret-never-shown"),
            subject: .idToken(of: session))
        let idToken = try #require(try await session.currentCredential()?.idToken)
        let text = "\(grant) \(grant.assertion(audience: "https://auth.tools.example.com", resource: resource))"
        #expect(!text.contains("s3cret-never-shown") && !text.contains(idToken))
        #expect(text.contains("login.example.com"))
    }
}
