import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

@testable import DPoP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// DPoP at the token endpoint (RFC 9449 §5, §8): every grant proves, tokens come back bound, a
/// refresh keeps the key, a nonce is answered once.
@Suite struct DPoPTokenEndpointTests {
    let clock = TestClock()
    let server: DPoPTestServer
    let prover: DPoPProver

    init() {
        server = DPoPTestServer(clock: clock)
        prover = DPoPProver(clock: clock)
    }

    var endpoint: TokenEndpoint { TokenEndpoint(url: tokenURL, client: .none(id: "app")) }

    @Test func everyGrantSendsAProofAndADPoPTokenComesBackBoundToTheKey() async throws {
        let context = server.context(proof: prover)
        let grants: [(String, [(String, String)])] = [
            ("client_credentials", []),
            ("authorization_code", [("code", "c"), ("redirect_uri", "https://app.example.com/cb")]),
            ("urn:ietf:params:oauth:grant-type:device_code", [("device_code", "d")]),
            ("urn:ietf:params:oauth:grant-type:token-exchange", [("subject_token", "s")]),
        ]
        for (grant, parameters) in grants {
            let token = try await endpoint.requestToken(grantType: grant, parameters: parameters, context: context)
            #expect(token.tokenType == "DPoP")
            let proof = try #require(server.state.withLock { $0.tokenProofs.last })
            #expect(proof.claim("htm") == "POST")
            #expect(proof.claim("htu") == tokenURL.absoluteString)
            #expect(token.boundKey?.thumbprint == proof.thumbprint, "\(grant): cnf.jkt is the proof's key")
        }
        #expect(server.state.withLock { $0.tokenRequests.count } == grants.count)
    }

    @Test func theRefreshGrantUsesTheKeyOfTheTokenItRefreshes() async throws {
        let context = server.context(proof: prover)
        let first = try await endpoint.requestToken(grantType: "client_credentials", context: context)
        let refreshed = try await endpoint.refresh(first, context: context)
        let proofs = server.state.withLock { $0.tokenProofs }
        #expect(proofs.count == 2)
        #expect(proofs[1].thumbprint == proofs[0].thumbprint)
        #expect(refreshed.boundKey == first.boundKey)
        #expect(refreshed.tokenType == "DPoP")
        // Through the flows too: a refresh in a new process (a new prover) still uses the stored key.
        let flow = RefreshTokenFlow(tokenEndpoint: tokenURL, client: .none(id: "app"), refreshToken: "r")
        let again = try await flow.refresh(refreshed, for: server.context(proof: DPoPProver(clock: clock)))
        #expect(server.state.withLock { $0.tokenProofs.last?.thumbprint } == first.boundKey?.thumbprint)
        #expect(again.boundKey == first.boundKey)
    }

    @Test func aServerWithoutDPoPAnswersWithABearerTokenThatStaysUnbound() async throws {
        server.state.withLock { $0.tokenType = "Bearer" }
        let token = try await endpoint.requestToken(
            grantType: "client_credentials", context: server.context(proof: prover))
        #expect(token.isBearer)
        #expect(token.boundKey == nil)
    }

    @Test func bearerUsersSendNoProof() async throws {
        let token = try await endpoint.requestToken(
            grantType: "client_credentials", context: server.context(proof: nil))
        #expect(token.isBearer && token.boundKey == nil)
        #expect(server.state.withLock { $0.tokenRequests.first?.value(forHTTPHeaderField: "DPoP") } == nil)
    }

    @Test func aNonceDemandIsAnsweredOnceWithTheServersNonceAndRemembered() async throws {
        server.state.withLock { $0.tokenNonce = "nonce-1" }
        let context = server.context(proof: prover)
        let token = try await endpoint.requestToken(grantType: "client_credentials", context: context)
        #expect(token.tokenType == "DPoP")
        var proofs = server.state.withLock { $0.tokenProofs }
        #expect(proofs.count == 2)
        #expect(proofs[0].claim("nonce") == nil)
        #expect(proofs[1].claim("nonce") == "nonce-1")
        #expect(proofs[0].claim("jti") != proofs[1].claim("jti"), "the resend is a new proof")
        // The next request starts with the remembered nonce: one round trip.
        _ = try await endpoint.refresh(token, context: context)
        proofs = server.state.withLock { $0.tokenProofs }
        #expect(proofs.count == 3)
        #expect(proofs[2].claim("nonce") == "nonce-1")
    }

    @Test func aServerThatAlwaysDemandsANonceGetsTwoRequestsNotALoop() async throws {
        server.state.withLock {
            $0.tokenNonce = "nonce-1"
            $0.alwaysAskForNonce = true
        }
        do {
            _ = try await endpoint.requestToken(grantType: "client_credentials", context: server.context(proof: prover))
            Issue.record("a token came back")
        } catch let error as OAuthError {
            #expect(error.code == .useDPoPNonce)
            #expect(error.errorDescription == "Authorization server requires nonce")
        }
        #expect(server.state.withLock { $0.tokenRequests.count } == 2)
    }

    @Test func aRefusedProofIsATypedErrorAndNotResent() async throws {
        server.state.withLock { $0.tokenError = "invalid_dpop_proof" }
        do {
            _ = try await endpoint.requestToken(grantType: "client_credentials", context: server.context(proof: prover))
            Issue.record("a token came back")
        } catch let error as OAuthError {
            #expect(error.code == .invalidDPoPProof)
        }
        #expect(server.state.withLock { $0.tokenRequests.count } == 1)
    }

    @Test func theResendCarriesAFreshClientAssertion() async throws {
        struct CountingSigner: ClientAssertionSigner {
            let count = Locked(0)
            var methodName: String { "private_key_jwt" }
            func assertion(clientID: String, endpoint: URL, issuer: String?) async throws -> String {
                "assertion-\(count.withLock { $0 += 1; return $0 })"
            }
        }
        server.state.withLock { $0.tokenNonce = "n" }
        let signer = CountingSigner()
        _ = try await TokenEndpoint(url: tokenURL, client: .assertion(id: "app", signer: signer))
            .requestToken(grantType: "client_credentials", context: server.context(proof: prover))
        let bodies = server.state.withLock {
            $0.tokenRequests.map { String(decoding: $0.httpBody ?? Data(), as: UTF8.self) }
        }
        #expect(bodies.count == 2)
        #expect(bodies[0].contains("client_assertion=assertion-1"))
        #expect(bodies[1].contains("client_assertion=assertion-2"))
    }

    @Test func resourceIndicatorsGoWithEveryTokenRequest() async throws {
        let endpoint = TokenEndpoint(
            url: tokenURL, client: .none(id: "app"),
            resources: [URL(string: "https://api.example.com/")!, URL(string: "https://files.example.com/v1")!])
        let token = try await endpoint.requestToken(
            grantType: "client_credentials", context: server.context(proof: nil))
        _ = try await endpoint.refresh(token, context: server.context(proof: nil))
        for request in server.state.withLock({ $0.tokenRequests }) {
            let body = String(decoding: request.httpBody ?? Data(), as: UTF8.self)
            #expect(
                body.contains("resource=https%3A%2F%2Fapi.example.com%2F&resource=https%3A%2F%2Ffiles.example.com%2Fv1")
            )
        }
        let flow = ClientCredentialsFlow(
            tokenEndpoint: tokenURL, client: .none(id: "app"), resources: [URL(string: "https://a.example.com/#x")!])
        do {
            _ = try await flow.obtainToken(for: server.context(proof: nil))
            Issue.record("a fragment was sent")
        } catch let error as TokenEndpointError {
            #expect(error.code == .invalidConfiguration)
        }
        #expect(server.state.withLock { $0.tokenRequests.count } == 2, "nothing sent for the bad indicator")
    }
}
