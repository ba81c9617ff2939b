// Issue 13: validating an ID token with a cached JWKS, per token, for ES256 and RS256 (all
// rules of OpenID Connect Core §3.1.3.7: parsing, alg, iss, aud, signature, exp, iat, nonce,
// at_hash).
import AuthenticatedRequests
import Benchmark
import Crypto
import Foundation
import JWTKit
import OpenIDConnect
import RequestFixtures
import _CryptoExtras

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A validator whose JWKS is already cached, and a valid token for it.
struct IDTokenFixture: Sendable {
    let validator: IDTokenValidator
    let token: String
    let expectations: IDTokenExpectations
    let now: Date

    static func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func make(_ algorithm: String) async throws -> IDTokenFixture {
        let keys = JWTKeyCollection()
        let jwk: String
        switch algorithm {
        case "ES256":
            let key = ES256PrivateKey()
            await keys.add(ecdsa: key, kid: "k")
            guard let parameters = key.publicKey.parameters else { throw URLError(.badURL) }
            jwk = #"{"kty":"EC","crv":"P-256","kid":"k","x":"\#(parameters.x)","y":"\#(parameters.y)"}"#
        default:
            let key = try JWTKit.Insecure.RSA.PrivateKey(
                pem: _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation)
            await keys.add(rsa: key, digestAlgorithm: .sha256, kid: "k")
            let (modulus, exponent) = try key.publicKey.getKeyPrimitives()
            jwk = #"{"kty":"RSA","kid":"k","n":"\#(base64URL(modulus))","e":"\#(base64URL(exponent))"}"#
        }
        let jwks = Data(#"{"keys":[\#(jwk)]}"#.utf8)
        let context = AuthenticationContext(
            transport: InMemoryTransport { request in
                try InMemoryTransport.reply(to: request, headers: ["Content-Type": "application/json"], body: jwks)
            })
        let set = JSONWebKeySet(url: URL(string: "https://op.example.com/jwks")!, context: context)
        let validator = IDTokenValidator(
            issuer: "https://op.example.com", clientID: "client-1", keys: set, advertisedAlgorithms: [algorithm])
        let now = Date()
        let accessToken = "an-access-token-of-the-usual-size-0123456789"
        let atHash = base64URL(Array(SHA256.hash(data: Data(accessToken.utf8))).prefix(16))
        struct Claims: JWTPayload {
            let iss, sub, aud, nonce, at_hash, name: String
            let exp, iat, auth_time: Int
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let issued = Int(now.timeIntervalSince1970)
        let token = try await keys.sign(
            Claims(
                iss: "https://op.example.com", sub: "user-42", aud: "client-1", nonce: "n-0S6_WzA2Mj", at_hash: atHash,
                name: "Ada Lovelace", exp: issued + 3600, iat: issued, auth_time: issued),
            kid: "k")
        let expectations = IDTokenExpectations(nonce: "n-0S6_WzA2Mj", accessToken: accessToken)
        // Fill the cache: the benchmark measures validation with keys at hand.
        _ = try await validator.validate(token, expecting: expectations, now: now)
        return IDTokenFixture(validator: validator, token: token, expectations: expectations, now: now)
    }
}

func openIDBenchmarks() {
    for algorithm in ["ES256", "RS256"] {
        let fixture = Locked<IDTokenFixture?>(nil)
        Benchmark(
            "OpenID: validate an ID token, cached JWKS, \(algorithm)",
            configuration: .init(
                metrics: [.wallClock, .cpuTotal, .throughput], scalingFactor: .kilo, maxDuration: .seconds(5),
                setup: {
                    let made = try await IDTokenFixture.make(algorithm)
                    fixture.withLock { $0 = made }
                })
        ) { benchmark in
            guard let fixture = fixture.withLock({ $0 }) else { return }
            for _ in benchmark.scaledIterations {
                blackHole(
                    try await fixture.validator.validate(
                        fixture.token, expecting: fixture.expectations, now: fixture.now))
            }
        }
    }
}
