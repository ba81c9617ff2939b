import AuthenticatedRequests
import Crypto
import Foundation
import JWTKit
import TestSupport
import _CryptoExtras

@testable import OpenIDConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Any claims, as a jwt-kit payload.
struct RawClaims: JWTPayload {
    let claims: [String: JSONValue]
    init(_ claims: [String: JSONValue]) { self.claims = claims }
    init(from decoder: any Decoder) throws { claims = try [String: JSONValue](from: decoder) }
    func encode(to encoder: any Encoder) throws { try claims.encode(to: encoder) }
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// An OpenID provider in memory: test keys (ES256, RS256/PS256, EdDSA), a JWKS endpoint that
/// counts its fetches, and tokens signed by jwt-kit.
final class TestProvider: Sendable {
    static let issuer = "https://op.example.com"
    static let clientID = "client-1"
    let clock = TestClock()
    let ecKey: ES256PrivateKey
    let otherECKey: ES256PrivateKey
    let rsaKey: JWTKit.Insecure.RSA.PrivateKey
    let edKey: EdDSA.PrivateKey
    let published = Locked<[JSONValue]>([])
    let fetches = Locked(0)
    /// Other routes of the provider, by path.
    let routes = Locked<[String: @Sendable (URLRequest) async throws -> (Data, ResponseHead)]>([:])

    init() throws {
        ecKey = ES256PrivateKey()
        otherECKey = ES256PrivateKey()
        rsaKey = try JWTKit.Insecure.RSA.PrivateKey(pem: _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation)
        edKey = try EdDSA.PrivateKey(curve: .ed25519)
        published.withLock {
            $0 = [
                try? self.jwk(ec: ecKey, kid: "ec-1"), try? self.jwk(rsa: rsaKey, kid: "rsa-1"),
                self.jwk(ed: edKey, kid: "ed-1"),
            ]
            .compactMap { $0 }
        }
    }

    func jwk(ec key: ES256PrivateKey, kid: String?, use: String? = nil) throws -> JSONValue {
        guard let parameters = key.publicKey.parameters else { throw URLError(.badURL) }
        var members: [String: JSONValue] = [
            "kty": .string("EC"), "crv": .string("P-256"), "x": .string(parameters.x), "y": .string(parameters.y),
        ]
        if let kid { members["kid"] = .string(kid) }
        if let use { members["use"] = .string(use) }
        return .object(members)
    }

    func jwk(rsa key: JWTKit.Insecure.RSA.PrivateKey, kid: String) throws -> JSONValue {
        let (modulus, exponent) = try key.publicKey.getKeyPrimitives()
        return .object([
            "kty": .string("RSA"), "kid": .string(kid), "n": .string(Base64URL.encode(modulus)),
            "e": .string(Base64URL.encode(exponent)),
        ])
    }

    func jwk(ed key: EdDSA.PrivateKey, kid: String) -> JSONValue {
        .object([
            "kty": .string("OKP"), "crv": .string("Ed25519"), "kid": .string(kid),
            "x": .string(Base64URL.encode(key.publicKey.rawRepresentation)),
        ])
    }

    var context: AuthenticationContext {
        AuthenticationContext(
            transport: InMemoryTransport { [self] request in
                guard request.url?.path == "/jwks" else {
                    guard let route = routes.withLock({ $0[request.url?.path ?? ""] }) else {
                        return try InMemoryTransport.reply(to: request, status: 404)
                    }
                    return try await route(request)
                }
                fetches.withLock { $0 += 1 }
                let body = try JSONEncoder().encode(JSONValue.object(["keys": .array(published.withLock { $0 })]))
                return try InMemoryTransport.reply(
                    to: request, headers: ["Content-Type": "application/json"], body: body)
            }, clock: clock)
    }

    func validator(
        advertised: [String] = ["RS256", "PS256", "ES256", "EdDSA"], secret: String? = nil,
        options: IDTokenValidator.Options = IDTokenValidator.Options()
    ) -> IDTokenValidator {
        IDTokenValidator(
            issuer: Self.issuer, clientID: Self.clientID,
            keys: JSONWebKeySet(
                url: URL(string: "https://op.example.com/jwks")!, minimumRefetchInterval: 60, context: context),
            advertisedAlgorithms: advertised, clientSecret: secret, options: options)
    }

    /// Valid claims at the clock's now, with `changes` applied (`.null` removes a claim).
    func claims(_ changes: [String: JSONValue] = [:]) -> [String: JSONValue] {
        let now = clock.now.timeIntervalSince1970
        var claims: [String: JSONValue] = [
            "iss": .string(Self.issuer), "sub": .string("user-42"), "aud": .string(Self.clientID),
            "exp": .number(now + 300), "iat": .number(now), "nonce": .string("n-0S6_WzA2Mj"),
            "auth_time": .number(now - 10), "name": .string("Ada Lovelace"), "email": .string("ada@example.com"),
        ]
        for (name, value) in changes {
            if case .null = value { claims[name] = nil } else { claims[name] = value }
        }
        return claims
    }

    enum Signer { case ec, otherEC, rsa, pss, ed, hmac(String) }

    /// A token signed by `signer` (jwt-kit's algorithm signs), with `kid` in its header.
    func token(_ claims: [String: JSONValue], signer: Signer = .ec, kid: String? = "ec-1") async throws -> String {
        let keys = JWTKeyCollection()
        let id = JWKIdentifier(string: "signing")
        let alg: String
        switch signer {
        case .ec: (alg, _) = ("ES256", await keys.add(ecdsa: ecKey, kid: id))
        case .otherEC: (alg, _) = ("ES256", await keys.add(ecdsa: otherECKey, kid: id))
        case .rsa: (alg, _) = ("RS256", await keys.add(rsa: rsaKey, digestAlgorithm: .sha256, kid: id))
        case .pss: (alg, _) = ("PS256", await keys.add(pss: rsaKey, digestAlgorithm: .sha256, kid: id))
        case .ed: (alg, _) = ("EdDSA", await keys.add(eddsa: edKey, kid: id))
        case .hmac(let secret):
            (alg, _) = ("HS256", await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: id))
        }
        var header: [String: JSONValue] = ["alg": .string(alg), "typ": .string("JWT")]
        if let kid { header["kid"] = .string(kid) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let input =
            Base64URL.encode(try encoder.encode(JSONValue.object(header))) + "."
            + Base64URL.encode(try encoder.encode(JSONValue.object(claims)))
        let signature = try await keys.getKey(for: id, alg: alg).sign(Data(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }

    /// `token` with its header changed (the signature no longer covers it).
    func reheader(_ token: String, _ change: (inout [String: JSONValue]) -> Void) throws -> String {
        let parts = token.split(separator: ".")
        guard var header = try JSONValue(parsing: Base64URL.decode(parts[0]) ?? Data()).objectValue else {
            throw URLError(.badURL)
        }
        change(&header)
        let encoded = Base64URL.encode(try JSONEncoder().encode(JSONValue.object(header)))
        return ([encoded] + parts.dropFirst().map(String.init)).joined(separator: ".")
    }

    /// An unsigned token (`alg: none`).
    func unsigned(_ claims: [String: JSONValue]) throws -> String {
        let header = Base64URL.encode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let payload = Base64URL.encode(try JSONEncoder().encode(JSONValue.object(claims)))
        return "\(header).\(payload)."
    }
}
