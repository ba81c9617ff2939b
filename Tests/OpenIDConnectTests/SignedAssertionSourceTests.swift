import AuthenticatedRequests
import Foundation
import JWTKit
import OAuthFlows
import TestSupport
import Testing

@testable import OpenIDConnect

/// RFC 7523 §2.1 with an assertion the client signs: a new one for every grant, verified here
/// with jwt-kit as the authorization server would.
@Suite struct SignedAssertionSourceTests {
    let clock = TestClock()
    let server = TokenServer()
    let tokenEndpoint = URL(string: "https://auth.example.com/token")!

    func tokenReply() -> String {
        #"{"access_token":"at-\#(UUID().uuidString.prefix(6))","token_type":"Bearer","expires_in":60}"#
    }

    @Test func eachGrantPresentsAFreshAssertionForTheSubjectSignedByTheClientsKey() async throws {
        let key = ES256PrivateKey()
        let flow = JWTBearerFlow(
            tokenEndpoint: tokenEndpoint, client: .none(id: "reports-agent"),
            assertion: .signed(
                by: PrivateKeyJWT(key: key, keyID: "2026-11", lifetime: 120), issuer: "reports-agent",
                subject: "alice@example.com", tokenEndpoint: tokenEndpoint))
        server.reply(json: tokenReply())
        let first = try await flow.obtainToken(for: server.context(clock: clock))
        clock.advance(by: 90)
        server.reply(json: tokenReply())
        _ = try await flow.refresh(first, for: server.context(clock: clock))

        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key.publicKey, kid: "2026-11")
        let assertions = server.requests.compactMap { $0.form["assertion"] }
        #expect(assertions.count == 2)
        var jtis: [JSONValue?] = []
        for (index, assertion) in assertions.enumerated() {
            let claims = try await keys.verify(assertion, as: RawClaims.self).claims
            #expect(claims["iss"] == .string("reports-agent"))
            #expect(claims["sub"] == .string("alice@example.com"))
            #expect(claims["aud"] == .string("https://auth.example.com/token"))
            let issued = clock.now.timeIntervalSince1970.rounded(.down) - (index == 0 ? 90 : 0)
            #expect(claims["iat"]?.doubleValue == issued, "by the grant's clock")
            #expect(claims["exp"]?.doubleValue == issued + 120)
            #expect(try CompactJWS(assertion).keyID == "2026-11")
            jtis.append(claims["jti"])
        }
        #expect(jtis[0] != nil && jtis[0] != jtis[1], "a fresh jti for every grant")
    }

    @Test func theAudienceFollowsTheSignersRuleAndTheKeyIsInNoDescription() async throws {
        let key = ES256PrivateKey()
        let source = AssertionSource.signed(
            by: PrivateKeyJWT(key: key, audience: .issuer("https://auth.example.com")), issuer: "svc",
            subject: "svc", tokenEndpoint: tokenEndpoint)
        let assertion = try await source.assertion(for: server.context(clock: clock))
        #expect(try CompactJWS(assertion).claims["aud"] == .string("https://auth.example.com"))
        #expect(source.name.contains("svc") && !source.name.contains("BEGIN"))
        var dumped = ""
        dump(source, to: &dumped)
        #expect(!dumped.contains(assertion))
    }
}
