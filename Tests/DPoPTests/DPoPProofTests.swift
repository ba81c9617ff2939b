import AuthenticatedRequests
import Crypto
import Foundation
import TestSupport
import Testing

@testable import DPoP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The proof itself (RFC 9449 §4): header, claims, signature, thumbprint, and the keys behind it.
@Suite struct DPoPProofTests {
    let clock = TestClock()

    func proof(
        _ prover: DPoPProver, key: BoundKey, method: String = "GET", url: URL = apiURL, accessToken: String? = nil
    ) async throws -> InspectedProof {
        var request = URLRequest(url: url)
        request.httpMethod = method
        try await prover.prove(&request, with: key, accessToken: accessToken)
        return try await InspectedProof.verify(try #require(request.value(forHTTPHeaderField: "DPoP")))
    }

    @Test func theProofIsAVerifiedDPoPJWTWithThePublicKeyAndTheRequestsClaims() async throws {
        let prover = DPoPProver(clock: clock)
        let key = try await prover.key(for: nil)
        let proof = try await proof(prover, key: key, method: "POST", accessToken: "the-token")
        #expect(proof.header["typ"]?.stringValue == "dpop+jwt")
        #expect(proof.algorithm == "ES256")
        #expect(proof.jwk["kty"] == "EC" && proof.jwk["crv"] == "P-256")
        #expect(proof.jwk["d"] == nil, "the private key never goes into a proof")
        #expect(proof.claim("htm") == "POST")
        #expect(proof.claim("htu") == "https://api.example.com/me", "no query, no fragment")
        #expect(proof.issuedAt == Int(clock.now.timeIntervalSince1970))
        #expect(proof.claim("ath") == base64url(Data(SHA256.hash(data: Data("the-token".utf8)))))
        #expect(proof.claim("nonce") == nil)
        #expect(proof.thumbprint == key.thumbprint, "the stored thumbprint is RFC 7638's")
        #expect(key.algorithm == "ES256")
    }

    @Test func eachProofHashesTheTokenItCarriesWhenTheTokenChanges() async throws {
        // The prover keeps the last token's hash: a new token must get its own.
        let prover = DPoPProver(clock: clock)
        let key = try await prover.key(for: nil)
        for token in ["token-a", "token-a", "token-b", "token-a"] {
            let proof = try await proof(prover, key: key, method: "GET", accessToken: token)
            #expect(proof.claim("ath") == base64url(Data(SHA256.hash(data: Data(token.utf8)))), "\(token)")
        }
    }

    @Test func eachProofNamesItsOwnRequestsURIWhenTheURLChanges() async throws {
        // The prover keeps the last URL's target: a new URL must get its own, query and all.
        let prover = DPoPProver(clock: clock)
        let key = try await prover.key(for: nil)
        let urls = [
            "https://api.example.com/me", "https://api.example.com/me", "https://API.example.com/me?page=2",
            "https://api.example.com/other", "http://api.example.com/me", "https://api.example.com/me",
        ]
        let expected = [
            "https://api.example.com/me", "https://api.example.com/me", "https://api.example.com/me",
            "https://api.example.com/other", "http://api.example.com/me", "https://api.example.com/me",
        ]
        for (url, htu) in zip(urls, expected) {
            let proof = try await proof(prover, key: key, url: try #require(URL(string: url)))
            #expect(proof.claim("htu") == htu, "\(url)")
        }
    }

    @Test func everyProofHasItsOwnIdentifierAndATokenRequestHasNoTokenHash() async throws {
        let prover = DPoPProver(clock: clock)
        let key = try await prover.key(for: nil)
        var identifiers: Set<String> = []
        for _ in 0..<50 {
            let proof = try await proof(prover, key: key, method: "POST", url: tokenURL)
            #expect(proof.claim("ath") == nil)
            let jti = try #require(proof.claim("jti"))
            #expect(jti.count >= 22, "at least 128 bits")
            identifiers.insert(jti)
        }
        #expect(identifiers.count == 50)
    }

    @Test(arguments: [
        ("https://API.Example.com:8443/a/b?c=d#e", "https://api.example.com:8443/a/b"),
        ("https://user:pw@api.example.com/x", "https://api.example.com/x"),
        ("https://api.example.com", "https://api.example.com/"),
        ("http://127.0.0.1:8080/token?x=1", "http://127.0.0.1:8080/token"),
        ("https://api.example.com/a%20b", "https://api.example.com/a%20b"),
    ])
    func theTargetURIDropsQueryFragmentAndUserInfo(url: String, htu: String) throws {
        #expect(try DPoPProof.targetURI(of: try #require(URL(string: url))) == htu)
    }

    @Test(arguments: [
        ("https://api.example.com/a", "https://api.example.com:443"),
        ("https://API.example.com:443/b?x", "https://api.example.com:443"),
        ("http://127.0.0.1/token", "http://127.0.0.1:80"),
        ("http://[::1]:8080/x", "http://[::1]:8080"),
        ("https://[::1]/x", "https://[::1]:443"),
        ("https://user@api.example.com:8443", "https://api.example.com:8443"),
    ])
    func noncesBelongToTheOriginWithItsPortWrittenOut(url: String, origin: String) throws {
        #expect(try ProofTarget(try #require(URL(string: url))).origin == origin)
    }

    @Test func aRequestThatIsNotHTTPGetsNoProof() async throws {
        let prover = DPoPProver(clock: clock)
        let key = try await prover.key(for: nil)
        var request = URLRequest(url: try #require(URL(string: "ftp://example.com/file")))
        await #expect(throws: DPoPError.self) { try await prover.prove(&request, with: key, accessToken: nil) }
        #expect(request.value(forHTTPHeaderField: "DPoP") == nil)
    }

    @Test func eachSessionGetsANewKeyAndEdDSAKeysWorkToo() async throws {
        let prover = DPoPProver(clock: clock)
        let first = try await prover.key(for: nil)
        let second = try await prover.key(for: nil)
        #expect(first.thumbprint != second.thumbprint)
        let edProver = DPoPProver(keySource: SoftwareDPoPKeySource(algorithm: .edDSA), clock: clock)
        let edKey = try await edProver.key(for: nil)
        let proof = try await proof(edProver, key: edKey)
        #expect(proof.algorithm == "EdDSA")
        #expect(proof.jwk["kty"] == "OKP" && proof.jwk["crv"] == "Ed25519")
        #expect(proof.thumbprint == edKey.thumbprint)
    }

    @Test func aStoredKeyComesBackInAnotherProverAndSignsForTheSameThumbprint() async throws {
        let key = try await DPoPProver(clock: clock).key(for: nil)
        let stored = try JSONEncoder().encode(OAuthToken(accessToken: "t", tokenType: "DPoP", boundKey: key))
        let restored = try JSONDecoder().decode(OAuthToken.self, from: stored)
        #expect(restored.boundKey == key)
        let other = DPoPProver(clock: clock)  // a new process: nothing cached
        #expect(try await other.key(for: restored) == key)
        #expect(try await proof(other, key: key).thumbprint == key.thumbprint)
    }

    @Test func aKeyThatIsGoneOrAnotherKeyIsRefused() async throws {
        let key = try await DPoPProver(clock: clock).key(for: nil)
        var gone = key
        gone.storedKey = Data([1, 2, 3])
        await #expect(throws: DPoPError.self) {
            try await DPoPProver(clock: clock).key(for: OAuthToken(accessToken: "t", boundKey: gone))
        }
        var swapped = key
        swapped.storedKey = try await DPoPProver(clock: clock).key(for: nil).storedKey
        do {
            _ = try await DPoPProver(clock: clock).key(for: OAuthToken(accessToken: "t", boundKey: swapped))
            Issue.record("another key was accepted")
        } catch let error as DPoPError {
            #expect(error.code == .keyMismatch)
        }
        let supplied = try await SoftwareDPoPKey.generate()
        let fixed = DPoPProver(key: supplied, clock: clock)
        let fixedKey = try await fixed.key(for: nil)
        #expect(try await fixed.key(for: nil) == fixedKey, "an app-supplied key serves every session")
        await #expect(throws: DPoPError.self) { try await fixed.key(for: OAuthToken(accessToken: "t", boundKey: key)) }
    }

    @Test func descriptionsNeverShowThePrivateKey() async throws {
        let key = try await DPoPProver(clock: clock).key(for: nil)
        let token = OAuthToken(accessToken: "secret-token", tokenType: "DPoP", boundKey: key)
        let stored = key.storedKey.base64EncodedString()
        for text in [
            String(describing: key), String(reflecting: key), String(describing: token),
            "\(Mirror(reflecting: key).children.map(\.value))",
        ] {
            #expect(!text.contains(stored))
            #expect(!text.contains("secret-token"))
        }
        let software = try await SoftwareDPoPKey.generate()
        #expect(!String(describing: software).contains(software.storedRepresentation.base64EncodedString()))
    }

    @Test(arguments: [
        ("abc", true), ("!#[]~", true), ("", false), ("with space", false), ("quote\"", false),
        ("back\\slash", false), ("tab\t", false), ("é", false), (String(repeating: "n", count: 1025), false),
    ])
    func onlyNoncesOfTheRFCsCharactersAreRemembered(value: String, isNonce: Bool) {
        #expect((DPoPNonces.validated(value) != nil) == isNonce)
        let nonces = DPoPNonces()
        nonces.remember(value, for: apiURL)
        #expect((nonces.nonce(for: apiURL) == value) == isNonce)
    }

    @Test func noncesAreKeptPerOriginAndBounded() throws {
        let nonces = DPoPNonces()
        nonces.remember("api-nonce", for: apiURL)
        nonces.remember("as-nonce", for: tokenURL)
        #expect(nonces.nonce(for: try #require(URL(string: "https://api.example.com/other"))) == "api-nonce")
        #expect(nonces.nonce(for: tokenURL) == "as-nonce")
        #expect(nonces.nonce(for: try #require(URL(string: "https://api.example.com:444/me"))) == nil)
        for index in 0..<(DPoPNonces.capacity * 2) {
            nonces.remember("n\(index)", for: URL(string: "https://host\(index).example.com/"))
        }
        var remembered = 0
        for index in 0..<(DPoPNonces.capacity * 2)
        where nonces.nonce(for: try #require(URL(string: "https://host\(index).example.com/"))) != nil {
            remembered += 1
        }
        #expect(remembered <= DPoPNonces.capacity)
    }

    @Test func jsonTextEscapesWhatWouldBreakTheClaims() {
        #expect(JSONText.string(#"a"b\c"#) == #""a\"b\\c""#)
        #expect(JSONText.string("\u{1}\n") == #""\u0001\n""#)
    }
}
