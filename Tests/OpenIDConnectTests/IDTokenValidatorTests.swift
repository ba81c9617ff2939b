import AuthenticatedRequests
import Foundation
import JWTKit
import Testing

@testable import OpenIDConnect

/// OpenID Connect Core 1.0 §3.1.3.7, rule by rule: a valid token, and each way to break each rule.
@Suite struct IDTokenValidatorTests {
    let provider: TestProvider
    let nonce = IDTokenExpectations(nonce: "n-0S6_WzA2Mj")

    init() throws { provider = try TestProvider() }

    func rejection(
        _ token: String, _ validator: IDTokenValidator? = nil, expecting: IDTokenExpectations? = nil
    ) async -> IDTokenValidationError? {
        let validator = validator ?? provider.validator()
        do {
            _ = try await validator.validate(token, expecting: expecting ?? nonce, now: provider.clock.now)
            return nil
        } catch let error as IDTokenValidationError {
            #expect(!error.description.contains(token), "the error never shows the token")
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    // MARK: Step-up (RFC 9470)

    @Test func aStepUpsTokenMustCarryAnAcrAskedForAndTheSessionsSubject() async throws {
        var stepUp = nonce
        stepUp.acrValues = ["urn:mfa", "urn:phr"]
        stepUp.subject = "user-42"
        let good = try await provider.token(provider.claims(["acr": .string("urn:phr")]))
        #expect(await rejection(good, expecting: stepUp) == nil)
        let weak = try await provider.token(provider.claims(["acr": .string("urn:password")]))
        #expect(await rejection(weak, expecting: stepUp)?.rule == .acr)
        let none = try await provider.token(provider.claims())
        #expect(await rejection(none, expecting: stepUp)?.rule == .acr)
        let someoneElse = try await provider.token(provider.claims(["acr": .string("urn:mfa"), "sub": .string("eve")]))
        #expect(await rejection(someoneElse, expecting: stepUp)?.rule == .subject)
    }

    // MARK: Valid tokens

    @Test func validTokensOfEveryAlgorithmPassAndGiveTypedClaims() async throws {
        for (signer, kid) in [(TestProvider.Signer.ec, "ec-1"), (.rsa, "rsa-1"), (.pss, "rsa-1"), (.ed, "ed-1")] {
            let token = try await provider.token(provider.claims(), signer: signer, kid: kid)
            let claims = try await provider.validator().validate(token, expecting: nonce, now: provider.clock.now)
            #expect(claims.subject == "user-42")
            #expect(claims.name == "Ada Lovelace")
            #expect(claims.email == "ada@example.com")
            #expect(claims.raw["sub"] == .string("user-42"))
        }
    }

    // MARK: Rule 6-8: signature and alg

    @Test func aTokenSignedByAnotherKeyIsRejected() async throws {
        let token = try await provider.token(provider.claims(), signer: .otherEC, kid: "ec-1")
        #expect(await rejection(token)?.rule == .signature)
    }

    @Test func algNoneIsRejected() async throws {
        #expect(await rejection(try provider.unsigned(provider.claims()))?.rule == .algorithm)
        let lowercase = try provider.reheader(try await provider.token(provider.claims())) {
            $0["alg"] = .string("None")
        }
        #expect(await rejection(lowercase)?.rule == .algorithm)
    }

    @Test func anAlgorithmNeitherRegisteredNorAdvertisedIsRejected() async throws {
        let es256 = try await provider.token(provider.claims())
        #expect(await rejection(es256, provider.validator(advertised: ["RS256"]))?.rule == .algorithm)
        let pss = try await provider.token(provider.claims(), signer: .pss, kid: "rsa-1")
        let registered = provider.validator(options: .init(expectedAlgorithm: "RS256"))
        #expect(await rejection(pss, registered)?.rule == .algorithm)
        // The header may not switch an RSA key to another family.
        let confused = try provider.reheader(pss) { $0["alg"] = .string("ES256") }
        #expect(await rejection(confused) != nil)
    }

    @Test func hmacOnlyWithTheClientSecretAndOnlyWhenAskedFor() async throws {
        let token = try await provider.token(
            provider.claims(), signer: .hmac("client-secret-value-0123456789-abcdef"), kid: nil)
        let advertised = ["HS256", "RS256"]
        #expect(
            await rejection(
                token, provider.validator(advertised: advertised, secret: "client-secret-value-0123456789-abcdef"))?
                .rule == .algorithm)
        let allowing = provider.validator(
            advertised: advertised, secret: "client-secret-value-0123456789-abcdef", options: .init(allowsHMAC: true))
        #expect(await rejection(token, allowing) == nil)
        let wrongSecret = provider.validator(
            advertised: advertised, secret: "other-secret-value-0123456789-abcdef", options: .init(allowsHMAC: true))
        #expect(await rejection(token, wrongSecret)?.rule == .signature)
        let short = provider.validator(advertised: advertised, secret: "short", options: .init(allowsHMAC: true))
        #expect(await rejection(token, short)?.rule == .algorithm, "a secret under 32 bytes is no HMAC key")
    }

    @Test func malformedTokensAreRejected() async throws {
        for token in ["", "a.b", "a.b.c.d.e", "!!.??.**", "eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24.c2ln"] {
            #expect(await rejection(token)?.rule == .malformed, "\(token)")
        }
        let critical = try provider.reheader(try await provider.token(provider.claims())) {
            $0["crit"] = .array([.string("exp-x")])
        }
        #expect(await rejection(critical)?.rule == .algorithm)
    }

    // MARK: Rules 2-5: iss, aud, azp

    @Test func aWrongIssuerIsRejected() async throws {
        let token = try await provider.token(provider.claims(["iss": .string("https://evil.example.com")]))
        #expect(await rejection(token)?.rule == .issuer)
    }

    @Test func aWrongOrUntrustedAudienceIsRejected() async throws {
        let other = try await provider.token(provider.claims(["aud": .string("client-2")]))
        #expect(await rejection(other)?.rule == .audience)
        let extra = try await provider.token(
            provider.claims([
                "aud": .array([.string(TestProvider.clientID), .string("api")]), "azp": .string(TestProvider.clientID),
            ]))
        #expect(await rejection(extra)?.rule == .audience)
        #expect(await rejection(extra, provider.validator(options: .init(trustedAudiences: ["api"]))) == nil)
    }

    @Test func severalAudiencesNeedAnAzpThatIsTheClient() async throws {
        let trusting = provider.validator(options: .init(trustedAudiences: ["api"]))
        let audiences = JSONValue.array([.string(TestProvider.clientID), .string("api")])
        let missing = try await provider.token(provider.claims(["aud": audiences]))
        #expect(await rejection(missing, trusting)?.rule == .authorizedParty)
        let wrong = try await provider.token(provider.claims(["aud": audiences, "azp": .string("api")]))
        #expect(await rejection(wrong, trusting)?.rule == .authorizedParty)
    }

    // MARK: Rules 9-10: exp, iat

    @Test func anExpiredTokenIsRejectedBeyondTheSkew() async throws {
        let now = provider.clock.now.timeIntervalSince1970
        let expired = try await provider.token(provider.claims(["exp": .number(now - 120), "iat": .number(now - 400)]))
        #expect(await rejection(expired)?.rule == .expired)
        let withinSkew = try await provider.token(
            provider.claims(["exp": .number(now - 30), "iat": .number(now - 400)]))
        #expect(await rejection(withinSkew) == nil)
        #expect(await rejection(withinSkew, provider.validator(options: .init(clockSkew: 0)))?.rule == .expired)
    }

    @Test func aTokenIssuedInTheFutureIsRejected() async throws {
        let now = provider.clock.now.timeIntervalSince1970
        let future = try await provider.token(provider.claims(["iat": .number(now + 120)]))
        #expect(await rejection(future)?.rule == .issuedAt)
        let missing = try await provider.token(provider.claims(["iat": .null]))
        #expect(await rejection(missing)?.rule == .issuedAt)
    }

    @Test func aNewSignInsTokenIssuedLongAgoIsRejectedARefreshedOneIsNot() async throws {
        let now = provider.clock.now.timeIntervalSince1970
        let weekOld = try await provider.token(
            provider.claims(["iat": .number(now - 7 * 86400), "exp": .number(now + 300)]))
        let rejected = await rejection(weekOld)
        #expect(rejected?.rule == .issuedAt)
        #expect(rejected?.description.contains("604800 s in the past") == true, "\(String(describing: rejected))")
        let hourOld = try await provider.token(
            provider.claims(["iat": .number(now - 3600), "exp": .number(now + 300)]))
        #expect(await rejection(hourOld) == nil, "an hour, the default, within the skew")
        #expect(
            await rejection(weekOld, provider.validator(options: .init(maximumIssuedAtAge: nil))) == nil,
            "nil accepts any age")
        // A refresh may hand the session's ID token back as it was: its age is not judged.
        let previous = try await provider.validator().validate(
            try await provider.token(provider.claims([:])), expecting: nonce, now: provider.clock.now)
        let refreshed = try await provider.token(
            provider.claims(["iat": .number(now - 7 * 86400), "exp": .number(now + 300), "nonce": .null]))
        #expect(await rejection(refreshed, expecting: IDTokenExpectations(previous: previous)) == nil)
    }

    // MARK: Rule 11: nonce

    @Test func aWrongOrMissingNonceIsRejected() async throws {
        let wrong = try await provider.token(provider.claims(["nonce": .string("replayed")]))
        #expect(await rejection(wrong)?.rule == .nonce)
        let missing = try await provider.token(provider.claims(["nonce": .null]))
        #expect(await rejection(missing)?.rule == .nonce)
        let unexpected = try await provider.token(provider.claims())
        #expect(await rejection(unexpected, expecting: IDTokenExpectations())?.rule == .nonce)
    }

    // MARK: Rule 13: auth_time with max_age

    @Test func aStaleOrMissingAuthTimeIsRejectedWhenMaxAgeWasAskedFor() async throws {
        let now = provider.clock.now.timeIntervalSince1970
        let stale = try await provider.token(provider.claims(["auth_time": .number(now - 3600)]))
        let maxAge = IDTokenExpectations(nonce: "n-0S6_WzA2Mj", maxAge: 600)
        #expect(await rejection(stale, expecting: maxAge)?.rule == .authTime)
        #expect(await rejection(stale) == nil, "without max_age, auth_time is not judged")
        let missing = try await provider.token(provider.claims(["auth_time": .null]))
        #expect(await rejection(missing, expecting: maxAge)?.rule == .authTime)
        let recent = try await provider.token(provider.claims(["auth_time": .number(now - 300)]))
        #expect(await rejection(recent, expecting: maxAge) == nil)
    }

    // MARK: at_hash, c_hash

    @Test func atHashAndCHashMustMatchWhenPresent() async throws {
        let accessToken = "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y"
        let good = IDTokenValidator.leftHalfHash(of: accessToken, algorithm: "ES256")
        let valid = try await provider.token(provider.claims(["at_hash": .string(good)]))
        let withToken = IDTokenExpectations(nonce: "n-0S6_WzA2Mj", accessToken: accessToken)
        #expect(await rejection(valid, expecting: withToken) == nil)
        let wrong = try await provider.token(provider.claims(["at_hash": .string("aaaaaaaaaaaaaaaaaaaaaa")]))
        #expect(await rejection(wrong, expecting: withToken)?.rule == .tokenHash)
        let code = IDTokenExpectations(
            nonce: "n-0S6_WzA2Mj", code: "Qcb0Orv1zh30vL1MPRsbm-diHiMwcLyZvn1arpZv-Jxf_11jnpEX3Tgfvk")
        let badCode = try await provider.token(provider.claims(["c_hash": .string("bbbbbbbbbbbbbbbbbbbbbb")]))
        #expect(await rejection(badCode, expecting: code)?.rule == .tokenHash)
    }

    @Test func theLeftHalfHashIsTheSpecsExample() {
        // OpenID Connect Core §A.3's example: this access token's at_hash for RS256.
        #expect(
            IDTokenValidator.leftHalfHash(of: "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y", algorithm: "RS256")
                == "77QmUPtjPfzWtF2AnpK9RQ")
        #expect(
            IDTokenValidator.leftHalfHash(
                of: "Qcb0Orv1zh30vL1MPRsbm-diHiMwcLyZvn1arpZv-Jxf_11jnpEX3Tgfvk", algorithm: "RS256")
                == "LDktKdoQak3Pk0cnXxCltA")
    }

    // MARK: §12.2: refreshed ID tokens

    @Test func aRefreshedTokenMustBelongToTheSameSession() async throws {
        let first = try await provider.validator().validate(
            try await provider.token(provider.claims()), expecting: nonce, now: provider.clock.now)
        let otherUser = try await provider.token(provider.claims(["sub": .string("user-7"), "nonce": .null]))
        #expect(await rejection(otherUser, expecting: IDTokenExpectations(previous: first))?.rule == .subject)
        let sameUser = try await provider.token(provider.claims(["nonce": .null]))
        #expect(await rejection(sameUser, expecting: IDTokenExpectations(previous: first)) == nil)
    }
}

/// Base64url as RFC 4648 §5 defines it, without padding.
@Suite struct Base64URLTests {
    @Test func roundTripsEveryLengthAndMatchesFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let encoded = Base64URL.encode(bytes)
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(encoded == foundation)
            #expect(Base64URL.decode(Substring(encoded)) == Data(bytes))
        }
    }

    @Test func refusesPaddingForeignCharactersAndImpossibleLengths() {
        #expect(Base64URL.decode("YQ==") == nil)
        #expect(Base64URL.decode("a+b/") == nil)
        #expect(Base64URL.decode("abcde") == nil, "4n+1 characters encode nothing")
        #expect(Base64URL.decode("YR") == nil, "non-zero trailing bits")
        #expect(Base64URL.decode("YQ") == Data("a".utf8))
    }
}
