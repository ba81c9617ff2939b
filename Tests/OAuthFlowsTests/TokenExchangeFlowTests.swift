import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 8693 token exchange, typed: the sources asked anew on every exchange, the parameters in
/// the RFC's shape, and the reply's checks.
@Suite struct TokenExchangeFlowTests {
    let clock = TestClock()
    let server = TokenServer()
    var context: AuthenticationContext { server.context(clock: clock) }

    func exchanged(_ type: String = "urn:ietf:params:oauth:token-type:access_token", tokenType: String = "Bearer")
        -> String
    {
        #"{"access_token":"exchanged-\#(UUID().uuidString.prefix(6))","issued_token_type":"\#(type)","token_type":"\#(tokenType)","expires_in":60}"#
    }

    @Test func theRequestCarriesTheSubjectTheActorAndEveryTarget() async throws {
        server.reply(json: exchanged())
        let flow = TokenExchangeFlow(
            tokenEndpoint: tokenURL, client: .clientSecretBasic(id: "gateway", secret: "s3cret-gateway"),
            subject: .fixed("user-token-1", type: .accessToken), actor: .fixed("actor-jwt-1", type: .jwt),
            requestedTokenType: .accessToken, audiences: ["backend-a", "backend-b"],
            resources: [URL(string: "https://a.example.com/api")!], scope: "read")
        let token = try await flow.obtainToken(for: context)
        #expect(token.accessToken.hasPrefix("exchanged-"))
        let sent = try #require(server.requests.first)
        #expect(
            sent.formNames == [
                "grant_type", "subject_token", "subject_token_type", "actor_token", "actor_token_type",
                "requested_token_type", "audience", "audience", "scope", "resource",
            ])
        #expect(sent.form["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange")
        #expect(sent.form["subject_token_type"] == "urn:ietf:params:oauth:token-type:access_token")
        #expect(sent.form["actor_token_type"] == "urn:ietf:params:oauth:token-type:jwt")
        #expect(sent.form["resource"] == "https://a.example.com/api")
    }

    @Test func withoutAnActorNeitherActorParameterIsSent() async throws {
        server.reply(json: exchanged())
        let flow = TokenExchangeFlow(
            tokenEndpoint: tokenURL, client: .none(id: "app"), subject: .fixed("user-token-1", type: .idToken))
        _ = try await flow.obtainToken(for: context)
        let names = try #require(server.requests.first).formNames
        #expect(!names.contains("actor_token") && !names.contains("actor_token_type"))
    }

    @Test func theSubjectIsAskedAnewForEveryExchange() async throws {
        // Delegation from another authenticator: when it refreshes, the next exchange presents the new token.
        let upstreamFlow = FakeFlow()
        let upstream = OAuthAuthenticator(flow: upstreamFlow, configuration: .init(clock: clock))
        let flow = TokenExchangeFlow(
            tokenEndpoint: tokenURL, client: .none(id: "app"), subject: .accessToken(of: upstream))
        server.reply(json: exchanged())
        let first = try await flow.obtainToken(for: context)
        clock.advance(by: 7200)  // the upstream token (1 h) expired; the exchanged one too
        server.reply(json: exchanged())
        _ = try await flow.refresh(first, for: context)
        let subjects = server.requests.map { $0.form["subject_token"] }
        #expect(subjects == ["access-1", "access-2"], "the second exchange presents the refreshed token")
    }

    @Test func aRefreshTokenIsUsedWhenOneWasIssued() async throws {
        server.reply(
            json:
                #"{"access_token":"x1","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","refresh_token":"rt-1"}"#
        )
        let flow = TokenExchangeFlow(
            tokenEndpoint: tokenURL, client: .none(id: "app"), subject: .fixed("user-token-1", type: .accessToken))
        let first = try await flow.obtainToken(for: context)
        server.reply(json: #"{"access_token":"x2","token_type":"Bearer"}"#)
        _ = try await flow.refresh(first, for: context)
        #expect(server.requests.last?.form["grant_type"] == "refresh_token")
    }

    @Test func aReplyWithoutIssuedTokenTypeIsRefused() async throws {
        server.reply(json: #"{"access_token":"x","token_type":"Bearer"}"#)
        let flow = TokenExchangeFlow(
            tokenEndpoint: tokenURL, client: .none(id: "app"), subject: .fixed("user-token-1", type: .accessToken))
        let error = await #expect(throws: TokenEndpointError.self) { try await flow.obtainToken(for: context) }
        #expect(error?.code == .missingField)
        #expect(error?.field == "issued_token_type")
    }

    @Test func aReplyOfAnotherTypeThanTheOneAskedForIsRefused() async throws {
        server.reply(json: exchanged("urn:ietf:params:oauth:token-type:id_token"))
        let flow = TokenExchangeFlow(
            tokenEndpoint: tokenURL, client: .none(id: "app"), subject: .fixed("user-token-1", type: .accessToken),
            requestedTokenType: .idJAG)
        let error = await #expect(throws: TokenEndpointError.self) { try await flow.obtainToken(for: context) }
        #expect(error?.code == .invalidField)
        #expect(error?.field == "issued_token_type")
    }

    @Test func anNATokenIsAcceptedFromTheExchangeButNeverSentAsABearer() async throws {
        server.reply(json: exchanged("urn:ietf:params:oauth:token-type:id-jag", tokenType: "N_A"))
        let flow = TokenExchangeFlow(
            tokenEndpoint: tokenURL, client: .none(id: "app"), subject: .fixed("id-token-1", type: .idToken),
            requestedTokenType: .idJAG, audiences: ["https://mcp-auth.example.com"],
            resources: [URL(string: "https://mcp.example.com/mcp")!])
        let jag = try await flow.obtainToken(for: context)
        #expect(jag.tokenType == "N_A")
        #expect(!jag.isAccessToken)
        let sent = Locked(0)
        let api = InMemoryTransport { request in
            sent.withLock { $0 += 1 }
            return try InMemoryTransport.reply(to: request, json: #"{"name":"x"}"#)
        }
        let authenticator = OAuthAuthenticator(flow: flow, token: jag, configuration: .init(clock: clock))
        let error = await #expect(throws: AuthenticationError.self) {
            try await Me(authenticator: authenticator, transport: api).request()
        }
        #expect(error?.code == .notAnAccessToken)
        #expect(sent.withLock { $0 } == 0, "nothing was sent")
    }

    @Test(arguments: [
        "urn:ietf:params:oauth:token-type:id-jag", "urn:ietf:params:oauth:token-type:id_token",
        "urn:ietf:params:oauth:token-type:saml1", "urn:ietf:params:oauth:token-type:saml2",
        "urn:ietf:params:oauth:token-type:refresh_token",
    ])
    func aTokenThatIsNotAnAccessTokenIsNeverSentAsABearerWhateverItsTokenTypeSays(_ issued: String) async throws {
        // No requestedTokenType: the reply's issued_token_type decides, not its token_type.
        server.reply(json: exchanged(issued, tokenType: "Bearer"))
        let flow = TokenExchangeFlow(
            tokenEndpoint: tokenURL, client: .none(id: "app"), subject: .fixed("id-token-1", type: .idToken),
            audiences: ["https://mcp-auth.example.com"])
        let token = try await flow.obtainToken(for: context)
        #expect(token.tokenType == "Bearer")
        #expect(!token.isAccessToken)
        let sent = Locked(0)
        let api = InMemoryTransport { request in
            sent.withLock { $0 += 1 }
            return try InMemoryTransport.reply(to: request, json: #"{"name":"x"}"#)
        }
        let authenticator = OAuthAuthenticator(flow: flow, token: token, configuration: .init(clock: clock))
        for _ in 0..<2 {
            let error = await #expect(throws: AuthenticationError.self) {
                try await Me(authenticator: authenticator, transport: api).request()
            }
            #expect(error?.code == .notAnAccessToken)
            #expect(error?.description.contains(issued) == true)
        }
        #expect(sent.withLock { $0 } == 0, "nothing was sent")
    }

    @Test func anAccessTokenOrJWTFromAnExchangeIsSentAsABearer() async throws {
        for issued in ["urn:ietf:params:oauth:token-type:access_token", "urn:ietf:params:oauth:token-type:jwt"] {
            server.reply(json: exchanged(issued, tokenType: "Bearer"))
            let flow = TokenExchangeFlow(
                tokenEndpoint: tokenURL, client: .none(id: "app"), subject: .fixed("t", type: .accessToken))
            #expect(try await flow.obtainToken(for: context).isAccessToken, "\(issued)")
        }
    }

    @Test func invalidTargetIsATypedOAuthError() async throws {
        server.reply(status: 400, json: #"{"error":"invalid_target","error_description":"unknown audience"}"#)
        let flow = TokenExchangeFlow(
            tokenEndpoint: tokenURL, client: .none(id: "app"), subject: .fixed("user-token-1", type: .accessToken),
            audiences: ["nowhere"])
        let error = await #expect(throws: OAuthError.self) { try await flow.obtainToken(for: context) }
        #expect(error?.code == .invalidTarget)
        #expect(error?.errorDescription == "unknown audience")
    }

    @Test func noTokenOfASourceAppearsInDescriptionsOrErrors() async throws {
        let flow = TokenExchangeFlow(
            tokenEndpoint: tokenURL, client: .clientSecretBasic(id: "gateway", secret: "s3cret-gateway"),
            subject: .fixed("SUBJECT-secret-token", type: .accessToken),
            actor: .fixed("ACTOR-secret-token", type: .jwt))
        var dumped = ""
        dump(flow, to: &dumped)
        for text in [
            String(describing: flow), dumped, String(describing: SecurityToken("SUBJECT-secret-token", type: .jwt)),
        ] {
            for secret in ["SUBJECT-secret-token", "ACTOR-secret-token", "s3cret-gateway"] {
                #expect(!text.contains(secret), "\(text)")
            }
        }
        server.reply(
            status: 400,
            json: #"{"error":"invalid_request","error_description":"bad SUBJECT-secret-token and ACTOR-secret-token"}"#)
        let error = await #expect(throws: OAuthError.self) { try await flow.obtainToken(for: context) }
        let text = try #require(error).description
        #expect(!text.contains("SUBJECT-secret-token") && !text.contains("ACTOR-secret-token"), "\(text)")
    }
}
