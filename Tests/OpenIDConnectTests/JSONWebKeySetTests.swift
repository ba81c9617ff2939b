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
        #expect(provider.fetches.withLock { $0 } == 1, "within the minimum interval, no re-fetch")
        provider.clock.advance(by: 60)
        let forged = try await provider.token(provider.claims(), signer: .otherEC, kid: "made-up")
        let error = await #expect(throws: IDTokenValidationError.self) {
            try await validator.validate(forged, expecting: nonce, now: provider.clock.now)
        }
        #expect(error?.rule == .unknownKey)
        #expect(provider.fetches.withLock { $0 } == 2, "after the interval, one re-fetch")
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
