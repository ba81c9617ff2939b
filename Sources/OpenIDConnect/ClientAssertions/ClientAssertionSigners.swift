import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import JWTKit
import OAuthFlows

/// What a client assertion's `aud` names, and with it the assertion's `typ`.
///
/// RFC 10070 (November 2026, updating RFC 7523) makes the authorization server's issuer
/// identifier the one audience of a client assertion and gives the assertion the type
/// `client-authentication+jwt`: ``authorizationServer`` (the default) and ``issuer(_:)`` follow it.
/// ``endpoint`` and ``value(_:)`` are the rules of servers written before it: `typ` `JWT`.
public struct ClientAssertionAudience: Sendable, Hashable {
    enum Kind: Hashable { case authorizationServer, endpoint, issuer(String), legacy(String) }
    let kind: Kind

    /// The issuer identifier of the authorization server the client authenticates at, as the
    /// `ClientAuthentication` knows it (`ClientAuthentication.issuer`: from the server's
    /// metadata, or given to `ClientAuthentication.assertion(id:signer:issuer:)`), with `typ`
    /// `client-authentication+jwt`: RFC 10070's rule, and the default. Signing fails with
    /// ``OpenIDConnectError/Code/missingIssuer`` when the issuer is not known.
    public static let authorizationServer = ClientAssertionAudience(kind: .authorizationServer)
    /// The issuer identifier `issuer`, with `typ` `client-authentication+jwt` (RFC 10070).
    public static func issuer(_ issuer: String) -> ClientAssertionAudience {
        ClientAssertionAudience(kind: .issuer(issuer))
    }
    /// The URL the assertion is sent to (the token endpoint, or the PAR or revocation endpoint),
    /// with `typ` `JWT`: RFC 7523 §3's rule before RFC 10070, for servers that still require it
    /// (idpyoidc 5, for one, refuses the issuer).
    public static let endpoint = ClientAssertionAudience(kind: .endpoint)
    /// Any other value the server documents, with `typ` `JWT`.
    public static func value(_ value: String) -> ClientAssertionAudience {
        ClientAssertionAudience(kind: .legacy(value))
    }

    /// Whether the assertion follows RFC 10070 (`typ` `client-authentication+jwt`).
    var followsRFC10070: Bool {
        switch kind {
        case .authorizationServer, .issuer: true
        case .endpoint, .legacy: false
        }
    }

    /// The `typ` header of a client assertion with this audience.
    var clientAssertionType: String { followsRFC10070 ? ClientAssertion.jwtType : "JWT" }

    /// The `aud` of a client assertion sent to `endpoint` for the server whose issuer is `issuer`.
    func value(for endpoint: URL, issuer: String?) throws -> String {
        switch kind {
        case .authorizationServer:
            guard let issuer, !issuer.isEmpty else {
                throw OpenIDConnectError(
                    .missingIssuer,
                    "A client assertion's audience is the authorization server's issuer identifier (RFC 10070), "
                        + "and this client knows none: pass issuer: to ClientAuthentication.assertion(id:signer:issuer:), "
                        + "build the flow from the server's metadata, or sign with audience: .endpoint for a server "
                        + "that still wants its endpoint's URL.")
            }
            return issuer
        case .endpoint: return endpoint.absoluteString
        case .issuer(let value), .legacy(let value): return value
        }
    }

    /// The `aud` of an authorization grant assertion (RFC 7523 §2.1) sent to `tokenEndpoint`:
    /// the token endpoint for ``authorizationServer`` and ``endpoint``, the value otherwise.
    func grantValue(for tokenEndpoint: URL) -> String {
        switch kind {
        case .authorizationServer, .endpoint: tokenEndpoint.absoluteString
        case .issuer(let value), .legacy(let value): value
        }
    }
}

/// The claims of a client assertion (RFC 7523 §3).
struct ClientAssertionClaims: JWTPayload {
    let iss: String
    let sub: String
    let aud: String
    let jti: String
    let iat: Int
    let exp: Int
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Signs client assertions with the client's private key: `private_key_jwt` (OpenID Connect
/// Core §9, RFC 7523). Register the public key with the server (its JWKS or `jwks_uri`).
///
/// ```swift
/// let client = ClientAuthentication.assertion(
///     id: "my-service", signer: PrivateKeyJWT(key: try ES256PrivateKey(pem: pem), keyID: "2026-11"))
/// ```
public struct PrivateKeyJWT: ClientAssertionSigner {
    enum Key: Sendable {
        case ecdsa(ES256PrivateKey)
        case rsa(JWTKit.Insecure.RSA.PrivateKey, pss: Bool)
        case eddsa(EdDSA.PrivateKey)
    }

    let key: Key
    /// The `kid` of the header, naming the key among those registered.
    public let keyID: String?
    /// What `aud` names.
    public let audience: ClientAssertionAudience
    /// How long an assertion is valid, in seconds (60 by default).
    public let lifetime: TimeInterval
    let clock: any WallClock

    /// `private_key_jwt`.
    public var methodName: String { "private_key_jwt" }

    /// ES256 with a P-256 key.
    public init(
        key: ES256PrivateKey, keyID: String? = nil, audience: ClientAssertionAudience = .authorizationServer,
        lifetime: TimeInterval = 60, clock: any WallClock = SystemWallClock()
    ) {
        self.init(key: .ecdsa(key), keyID: keyID, audience: audience, lifetime: lifetime, clock: clock)
    }

    /// RS256, or PS256 with `pss`, with an RSA key.
    public init(
        key: JWTKit.Insecure.RSA.PrivateKey, pss: Bool = false, keyID: String? = nil,
        audience: ClientAssertionAudience = .authorizationServer, lifetime: TimeInterval = 60,
        clock: any WallClock = SystemWallClock()
    ) {
        self.init(key: .rsa(key, pss: pss), keyID: keyID, audience: audience, lifetime: lifetime, clock: clock)
    }

    /// EdDSA with an Ed25519 key.
    public init(
        key: EdDSA.PrivateKey, keyID: String? = nil, audience: ClientAssertionAudience = .authorizationServer,
        lifetime: TimeInterval = 60, clock: any WallClock = SystemWallClock()
    ) {
        self.init(key: .eddsa(key), keyID: keyID, audience: audience, lifetime: lifetime, clock: clock)
    }

    init(key: Key, keyID: String?, audience: ClientAssertionAudience, lifetime: TimeInterval, clock: any WallClock) {
        self.key = key
        self.keyID = keyID
        self.audience = audience
        self.lifetime = lifetime
        self.clock = clock
    }

    /// The key, in a collection jwt-kit signs with, under ``keyID``.
    func keyCollection() async -> (JWTKeyCollection, JWKIdentifier?) {
        let keys = JWTKeyCollection()
        let kid = keyID.map { JWKIdentifier(string: $0) }
        switch key {
        case .ecdsa(let key): await keys.add(ecdsa: key, kid: kid)
        case .rsa(let key, let pss):
            if pss {
                await keys.add(pss: key, digestAlgorithm: .sha256, kid: kid)
            } else {
                await keys.add(rsa: key, digestAlgorithm: .sha256, kid: kid)
            }
        case .eddsa(let key): await keys.add(eddsa: key, kid: kid)
        }
        return (keys, kid)
    }

    /// A fresh assertion for a request to `endpoint` at the server whose issuer is `issuer`:
    /// `aud` and `typ` as ``audience`` says (RFC 10070's issuer and `client-authentication+jwt`
    /// by default).
    public func assertion(clientID: String, endpoint: URL, issuer: String?) async throws -> String {
        let aud = try audience.value(for: endpoint, issuer: issuer)
        let (keys, kid) = await keyCollection()
        return try await ClientAssertionClaims.sign(
            issuer: clientID, subject: clientID, audience: aud, lifetime: lifetime, now: clock.now, keys: keys,
            kid: kid, type: audience.clientAssertionType)
    }
}

/// Signs client assertions with an HMAC of the client secret: `client_secret_jwt` (OpenID
/// Connect Core §9). HS256.
public struct ClientSecretJWT: ClientAssertionSigner {
    private let secret: String
    /// What `aud` names.
    public let audience: ClientAssertionAudience
    /// How long an assertion is valid, in seconds (60 by default).
    public let lifetime: TimeInterval
    let clock: any WallClock

    /// `client_secret_jwt`.
    public var methodName: String { "client_secret_jwt" }

    /// Creates the signer.
    public init(
        secret: String, audience: ClientAssertionAudience = .authorizationServer, lifetime: TimeInterval = 60,
        clock: any WallClock = SystemWallClock()
    ) {
        self.secret = secret
        self.audience = audience
        self.lifetime = lifetime
        self.clock = clock
    }

    /// A fresh assertion for a request to `endpoint` at the server whose issuer is `issuer`:
    /// `aud` and `typ` as ``audience`` says (RFC 10070's issuer and `client-authentication+jwt`
    /// by default).
    public func assertion(clientID: String, endpoint: URL, issuer: String?) async throws -> String {
        // RFC 7518 §3.2: an HS256 key has at least 256 bits.
        guard secret.utf8.count >= 32 else {
            throw OpenIDConnectError(.weakSecret, "client_secret_jwt needs a client secret of at least 32 bytes.")
        }
        let aud = try audience.value(for: endpoint, issuer: issuer)
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return try await ClientAssertionClaims.sign(
            issuer: clientID, subject: clientID, audience: aud, lifetime: lifetime, now: clock.now, keys: keys,
            kid: nil, type: audience.clientAssertionType)
    }
}

extension ClientAssertionClaims {
    /// Signs the claims of one assertion: a 256-bit random `jti`, `iat` now, `exp` after `lifetime`.
    /// A client assertion names the client as both `iss` and `sub`; an authorization grant
    /// assertion names the principal the token is for as `sub` (RFC 7523 §3).
    static func sign(
        issuer: String, subject: String, audience: String, lifetime: TimeInterval, now: Date,
        keys: JWTKeyCollection, kid: JWKIdentifier?, type: String = "JWT"
    ) async throws -> String {
        let issued = Int(now.timeIntervalSince1970)
        let claims = ClientAssertionClaims(
            iss: issuer, sub: subject, aud: audience, jti: AuthorizationRequest.makeState(), iat: issued,
            exp: issued + max(1, Int(lifetime)))
        return try await keys.sign(claims, kid: kid, header: ["typ": .string(type)])
    }
}
