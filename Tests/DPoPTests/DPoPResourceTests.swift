import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

@testable import DPoP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// DPoP at resources (RFC 9449 §7, §9) through the one authenticator engine.
@Suite struct DPoPResourceTests {
    let clock = TestClock()
    let server: DPoPTestServer

    init() {
        server = DPoPTestServer(clock: clock)
    }

    func authenticator(
        prover: DPoPProver?, store: (any TokenStore)? = nil, token: OAuthToken? = nil
    ) -> OAuthAuthenticator {
        OAuthAuthenticator(
            flow: ClientCredentialsFlow(tokenEndpoint: tokenURL, client: .none(id: "app")),
            token: token, store: store,
            configuration: .init(clock: clock, tokenTransport: server.transport, proofOfPossession: prover))
    }

    @Test func aBoundTokenIsSentAsDPoPWithAFreshProofPerRequest() async throws {
        let authenticator = authenticator(prover: DPoPProver(clock: clock))
        #expect(try await Profile(authenticator: authenticator, transport: server.transport).request().name == "Ada")
        clock.advance(by: 5)
        _ = try await Profile(authenticator: authenticator, transport: server.transport).request()
        let (requests, proofs) = server.state.withLock { ($0.apiRequests, $0.apiProofs) }
        let token = try #require(try await authenticator.currentCredential())
        #expect(requests.count == 2)
        #expect(requests.allSatisfy { $0.value(forHTTPHeaderField: "Authorization") == "DPoP \(token.accessToken)" })
        #expect(proofs.map { $0.claim("htm") } == ["GET", "GET"])
        #expect(proofs.allSatisfy { $0.claim("htu") == "https://api.example.com/me" })
        #expect(proofs.allSatisfy { $0.thumbprint == token.boundKey?.thumbprint })
        #expect(proofs[1].issuedAt == proofs[0].issuedAt.map { $0 + 5 })
        #expect(proofs[0].claim("jti") != proofs[1].claim("jti"))
    }

    @Test(arguments: ["dpOp", "dpop", "DPOP"])
    func aTokenTypeInAnyCasingIsSentWithTheSchemeSpelledDPoP(_ tokenType: String) async throws {
        server.state.withLock { $0.tokenType = tokenType }
        let authenticator = authenticator(prover: DPoPProver(clock: clock))
        #expect(try await Profile(authenticator: authenticator, transport: server.transport).request().name == "Ada")
        let token = try #require(try await authenticator.currentCredential())
        let sent = server.state.withLock { $0.apiRequests }.map { $0.value(forHTTPHeaderField: "Authorization") }
        #expect(sent == ["DPoP \(token.accessToken)"], "RFC 9449's spelling, not the server's \(tokenType)")
    }

    @Test func aNonceChallengeIsAnsweredOnceWithoutARefresh() async throws {
        server.state.withLock { $0.apiNonce = "api-nonce" }
        let authenticator = authenticator(prover: DPoPProver(clock: clock))
        let events = await authenticator.events()
        #expect(try await Profile(authenticator: authenticator, transport: server.transport).request().name == "Ada")
        let (apiRequests, tokenRequests, proofs) = server.state.withLock {
            ($0.apiRequests, $0.tokenRequests, $0.apiProofs)
        }
        #expect(apiRequests.count == 2)
        #expect(tokenRequests.count == 1, "the first token only: a nonce is not a refresh")
        #expect(proofs[1].claim("nonce") == "api-nonce")
        await authenticator.clearCredential()
        var kinds: [AuthenticationEvent.Kind] = []
        for await event in events {
            kinds.append(event.kind)
            if event.kind == .credentialCleared { break }
        }
        #expect(!kinds.contains(.credentialRefreshed))
        #expect(!kinds.contains(.requestRetried))
    }

    @Test func aResourceThatAlwaysDemandsANonceGetsTwoRequestsAndTheRequestFails() async throws {
        server.state.withLock {
            $0.apiNonce = "api-nonce"
            $0.alwaysAskForNonce = true
        }
        let authenticator = authenticator(prover: DPoPProver(clock: clock))
        do {
            _ = try await Profile(authenticator: authenticator, transport: server.transport).request()
            Issue.record("the request succeeded")
        } catch let error as ResourceError {
            #expect(error.response?.statusCode == 401)
            #expect(error.authenticationError == .useDPoPNonce)
            #expect(error.challenges.first?.hasScheme("DPoP") == true)
        }
        #expect(server.state.withLock { $0.apiRequests.count } == 2)
        #expect(server.state.withLock { $0.tokenRequests.count } == 1, "no refresh for a nonce")
    }

    @Test func aNonceFromASuccessfulResponseIsUsedByTheNextRequest() async throws {
        server.state.withLock { $0.apiNonceOnSuccess = "next-nonce" }
        let authenticator = authenticator(prover: DPoPProver(clock: clock))
        _ = try await Profile(authenticator: authenticator, transport: server.transport).request()
        _ = try await Profile(authenticator: authenticator, transport: server.transport).request()
        let proofs = server.state.withLock { $0.apiProofs }
        #expect(proofs.map { $0.claim("nonce") } == [nil, "next-nonce"])
    }

    @Test func anExpiredBoundTokenIsRefreshedWithTheSameKey() async throws {
        let authenticator = authenticator(prover: DPoPProver(clock: clock))
        _ = try await Profile(authenticator: authenticator, transport: server.transport).request()
        let first = try #require(try await authenticator.currentCredential())
        clock.advance(by: 4000)
        _ = try await Profile(authenticator: authenticator, transport: server.transport).request()
        let second = try #require(try await authenticator.currentCredential())
        #expect(second.accessToken != first.accessToken)
        #expect(second.boundKey == first.boundKey)
        let proofs = server.state.withLock { $0.tokenProofs }
        #expect(proofs.count == 2)
        #expect(Set(proofs.map(\.thumbprint)) == [try #require(first.boundKey?.thumbprint)])
    }

    @Test func aRestoredSessionKeepsItsBindingAcrossProvers() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("dpop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = FileTokenStore(directory: folder)
        let first = authenticator(prover: DPoPProver(clock: clock), store: store)
        _ = try await Profile(authenticator: first, transport: server.transport).request()
        let bound = try #require(try await first.currentCredential()?.boundKey)
        // Another launch: a new prover with nothing in memory reads the key from the store.
        let restored = authenticator(prover: DPoPProver(clock: clock), store: store)
        _ = try await Profile(authenticator: restored, transport: server.transport).request()
        #expect(server.state.withLock { $0.apiProofs.last?.thumbprint } == bound.thumbprint)
        #expect(server.state.withLock { $0.tokenRequests.count } == 1, "the stored token was used")
    }

    @Test func aTokenWhoseKeyIsGoneIsNotSent() async throws {
        var token = OAuthToken(
            accessToken: "access-1", tokenType: "DPoP", expiresAt: clock.now.addingTimeInterval(3600),
            boundKey: try await DPoPProver(clock: clock).key(for: nil))
        token.boundKey?.storedKey = Data(repeating: 0, count: 5)
        let authenticator = authenticator(prover: DPoPProver(clock: clock), token: token)
        do {
            _ = try await Profile(authenticator: authenticator, transport: server.transport).request()
            Issue.record("the request was sent")
        } catch let error as AuthenticationError {
            #expect(error.code == .keyUnavailable)
            #expect(error.underlyingError is DPoPError)
        }
        #expect(server.state.withLock { $0.apiRequests.isEmpty })
    }

    @Test func aDPoPTokenIsNeverSentAsBearer() async throws {
        let token = OAuthToken(
            accessToken: "access-1", tokenType: "DPoP", expiresAt: clock.now.addingTimeInterval(3600),
            boundKey: try await DPoPProver(clock: clock).key(for: nil))
        let authenticator = authenticator(prover: nil, token: token)
        do {
            _ = try await Profile(authenticator: authenticator, transport: server.transport).request()
            Issue.record("the request was sent")
        } catch let error as AuthenticationError {
            #expect(error.code == .keyUnavailable)
        }
        #expect(server.state.withLock { $0.apiRequests.isEmpty })
        var request = URLRequest(url: apiURL)
        BearerTokenAuthenticator(flow: ClientCredentialsFlow(tokenEndpoint: tokenURL, client: .none(id: "app")))
            .apply(token, to: &request)
        #expect(request.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test func aRejectedTokenIsRefreshedButARefusedProofIsNot() async throws {
        let prover = DPoPProver(clock: clock)
        let authenticator = BearerTokenAuthenticator(
            flow: ClientCredentialsFlow(tokenEndpoint: tokenURL, client: .none(id: "app")), proofOfPossession: prover)
        var request = URLRequest(url: apiURL)
        request.setValue("proof", forHTTPHeaderField: "DPoP")
        func response(_ challenge: String) -> ResponseHead {
            ResponseHead(statusCode: 401, url: apiURL, headerFields: [("WWW-Authenticate", challenge)])
        }
        let failure = URLError(.userAuthenticationRequired)
        #expect(
            authenticator.didRequest(
                request, with: response(#"DPoP error="invalid_token""#), failDueToAuthenticationError: failure))
        #expect(
            !authenticator.didRequest(
                request, with: response(#"DPoP error="invalid_dpop_proof""#), failDueToAuthenticationError: failure))
        #expect(
            !authenticator.didRequest(
                request, with: response(#"DPoP error="use_dpop_nonce""#), failDueToAuthenticationError: failure))
        #expect(
            !authenticator.shouldResend(request, after: response(#"DPoP error="use_dpop_nonce""#)),
            "no nonce sent: nothing to resend with")
    }

    @Test func bearerTokensAreUntouchedWhenAProverIsConfigured() async throws {
        server.state.withLock { $0.tokenType = "Bearer" }
        let bearer = OAuthToken(accessToken: "plain", expiresAt: clock.now.addingTimeInterval(3600))
        let authenticator = authenticator(prover: DPoPProver(clock: clock), token: bearer)
        _ = try? await Profile(authenticator: authenticator, transport: server.transport).request()
        let sent = try #require(server.state.withLock { $0.apiRequests.first })
        #expect(sent.value(forHTTPHeaderField: "Authorization") == "Bearer plain")
        #expect(sent.value(forHTTPHeaderField: "DPoP") == nil)
    }
}
