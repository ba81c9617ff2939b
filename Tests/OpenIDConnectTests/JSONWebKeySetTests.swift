import AuthenticatedRequests
import Foundation
import JWTKit
import Testing

@testable import OpenIDConnect

/// The provider's keys: cached, fetched again once for a key the cache does not know (rotation),
/// never more often than the minimum interval.
@Suite struct JSONWebKeySetTests {
    let provider: TestProvider
    let nonce = IDTokenExpectations(nonce: "n-0S6_WzA2Mj")

    init() throws { provider = try TestProvider() }

    @Test func keysAreFetchedOnceAndCached() async throws {
        let validator = provider.validator()
        for _ in 0..<5 {
            _ = try await validator.validate(
                try await provider.token(provider.claims()), expecting: nonce, now: provider.clock.now)
        }
        #expect(provider.fetches.withLock { $0 } == 1)
    }

    @Test func aRotatedKeyIsFoundWithOneRefetch() async throws {
        let validator = provider.validator()
        _ = try await validator.validate(
            try await provider.token(provider.claims()), expecting: nonce, now: provider.clock.now)
        // The provider rotates: a new key, published, and tokens signed with it.
        provider.clock.advance(by: 61)
        let rotated = try provider.jwk(ec: provider.otherECKey, kid: "ec-2")
        provider.published.withLock { $0.append(rotated) }
        let token = try await provider.token(provider.claims(), signer: .otherEC, kid: "ec-2")
        _ = try await validator.validate(token, expecting: nonce, now: provider.clock.now)
        #expect(provider.fetches.withLock { $0 } == 2, "one re-fetch for the unknown kid")
    }

    @Test func unknownKeyIDsCannotMakeTheClientHammerTheProvider() async throws {
        let validator = provider.validator()
        _ = try await validator.validate(
            try await provider.token(provider.claims()), expecting: nonce, now: provider.clock.now)
        for index in 0..<20 {
            let forged = try await provider.token(provider.claims(), signer: .otherEC, kid: "made-up-\(index)")
            await #expect(throws: IDTokenValidationError.self) {
                try await validator.validate(forged, expecting: nonce, now: provider.clock.now)
            }
        }
        #expect(provider.fetches.withLock { $0 } == 2, "one re-fetch for the first unknown kid, then none")
        provider.clock.advance(by: 60)
        let forged = try await provider.token(provider.claims(), signer: .otherEC, kid: "made-up")
        let error = await #expect(throws: IDTokenValidationError.self) {
            try await validator.validate(forged, expecting: nonce, now: provider.clock.now)
        }
        #expect(error?.rule == .unknownKey)
        #expect(provider.fetches.withLock { $0 } == 3, "after the interval, one re-fetch")
        for index in 0..<20 {
            let forged = try await provider.token(provider.claims(), signer: .otherEC, kid: "again-\(index)")
            _ = try? await validator.validate(forged, expecting: nonce, now: provider.clock.now)
        }
        #expect(provider.fetches.withLock { $0 } == 3, "no more than one fetch per interval")
    }

    @Test func aKeyRotatedSecondsAfterTheLastFetchCostsOneRefetchAtOnce() async throws {
        let validator = provider.validator()
        _ = try await validator.validate(
            try await provider.token(provider.claims()), expecting: nonce, now: provider.clock.now)
        provider.clock.advance(by: 5)  // well inside the 60 s interval
        let rotated = try provider.jwk(ec: provider.otherECKey, kid: "ec-2")
        provider.published.withLock { $0 = [rotated] }
        let token = try await provider.token(provider.claims(), signer: .otherEC, kid: "ec-2")
        _ = try await validator.validate(token, expecting: nonce, now: provider.clock.now)
        #expect(provider.fetches.withLock { $0 } == 2)
    }

    @Test func twoKeysUnderOneKidAreRefusedAsAmbiguous() async throws {
        let keys = [
            try provider.jwk(ec: provider.ecKey, kid: "ec-1"), try provider.jwk(ec: provider.otherECKey, kid: "ec-1"),
        ]
        for order in [keys, keys.reversed()] {
            provider.published.withLock { $0 = order }
            let token = try await provider.token(provider.claims(), kid: "ec-1")
            let error = await #expect(throws: IDTokenValidationError.self) {
                try await provider.validator().validate(token, expecting: nonce, now: provider.clock.now)
            }
            #expect(error?.rule == .ambiguousKey)
        }
    }

    @Test(arguments: [
        (
            #"{"kty":"RSA","kid":"k","n":"w9Soo2yqCi1Fvweko5Qm59q6W4ZLc2s5POjW-ZL3ipIEE8iOxreTm0za-gd3mLCcBkzDdsrt5iQWlZ7PNJpMpLqE1-8jy2ZWNdwNYKu0OTCHQQdpKpStxEtsyoh0ZIr5It8bhaSH6g9nP7K1eSuVq28e6c7lBI5VZrEXNXnRTJI","e":"AQAB"}"#,
            "RS256", "1024-bit"
        ),
        (
            #"{"kty":"EC","kid":"k","crv":"P-256","x":"\#(String(repeating: "A", count: 64))","y":"\#(String(repeating: "A", count: 64))"}"#,
            "ES256", "wrong size"
        ),
        (
            #"{"kty":"EC","kid":"k","crv":"P-256","x":"\#(String(repeating: "A", count: 43))","y":"\#(String(repeating: "A", count: 42))E"}"#,
            "ES256", "off its curve"
        ),
        (#"{"kty":"RSA","kid":"k","n":"!!","e":"AQAB"}"#, "RS256", "malformed"),
    ])
    func everyUnusableKeyIsATypedInvalidKeyError(key: String, algorithm: String, why: String) async throws {
        let object = try #require(try JSONValue(parsing: Data(#"{"keys":[\#(key)]}"#.utf8)).objectValue)
        let parsed = try JSONWebKeySet.keys(in: object)
        let set = JSONWebKeySet(
            url: URL(string: "https://op.example.com/jwks")!,
            context: .init(
                transport: InMemoryTransport { request in
                    try InMemoryTransport.reply(to: request, json: #"{"keys":[\#(key)]}"#)
                }))
        #expect(parsed.count == 1)
        let error = await #expect(throws: IDTokenValidationError.self, "\(why)") {
            _ = try await set.verifier(keyID: "k", algorithm: algorithm)
        }
        #expect(error?.rule == .invalidKey, "\(why): \(String(describing: error))")
    }

    @Test func encryptionKeysAndAmbiguousKeysAreNotUsed() async throws {
        provider.published.withLock {
            $0 = [try? self.provider.jwk(ec: self.provider.ecKey, kid: "ec-1", use: "enc")].compactMap { $0 }
        }
        let token = try await provider.token(provider.claims())
        await #expect(throws: IDTokenValidationError.self) {
            try await provider.validator().validate(token, expecting: nonce, now: provider.clock.now)
        }
        // Without a kid, one fitting key is used; two make it ambiguous.
        let keys = [
            try provider.jwk(ec: provider.ecKey, kid: nil), try provider.jwk(ec: provider.otherECKey, kid: nil),
        ]
        provider.published.withLock { $0 = [keys[0]] }
        let noKid = try await provider.token(provider.claims(), kid: nil)
        _ = try await provider.validator().validate(noKid, expecting: nonce, now: provider.clock.now)
        provider.published.withLock { $0 = keys }
        let error = await #expect(throws: IDTokenValidationError.self) {
            try await provider.validator().validate(noKid, expecting: nonce, now: provider.clock.now)
        }
        #expect(error?.rule == .unknownKey)
    }
}
