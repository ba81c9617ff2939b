import AuthenticatedRequests
import Crypto
import Foundation
import JWTKit

/// What an ID token must match besides the provider and client: what the request sent and what
/// came with the token.
public struct IDTokenExpectations: Sendable {
    /// The `nonce` of the authorization request; the token must carry the same.
    public var nonce: String?
    /// The `max_age` of the authorization request, in seconds: `auth_time` must be present and
    /// no older.
    public var maxAge: TimeInterval?
    /// The access token issued with the ID token, for `at_hash`.
    public var accessToken: String?
    /// The authorization code, for `c_hash`.
    public var code: String?
    /// The claims of the session's ID token, when this one comes from a refresh (Core §12.2:
    /// same `iss`, `sub`, `aud` and `auth_time`).
    public var previous: IDTokenClaims?
    /// The `acr` values asked for (RFC 9470 step-up, OpenID Connect Core §3.1.3.7 rule 12):
    /// when not empty, the token's `acr` must be one of them.
    public var acrValues: [String] = []
    /// The `sub` the token must name: a new sign-in of the same session (a step-up) must be the
    /// same user.
    public var subject: String? = nil

    /// Creates the expectations.
    public init(
        nonce: String? = nil, maxAge: TimeInterval? = nil, accessToken: String? = nil, code: String? = nil,
        previous: IDTokenClaims? = nil
    ) {
        self.nonce = nonce
        self.maxAge = maxAge
        self.accessToken = accessToken
        self.code = code
        self.previous = previous
    }
}

/// Validates ID tokens exactly as OpenID Connect Core 1.0 §3.1.3.7 lists the rules, in its order,
/// each failure an ``IDTokenValidationError`` that names the rule.
public struct IDTokenValidator: Sendable {
    /// Settings of the validation; strict by default.
    public struct Options: Sendable {
        /// The clock skew allowed for `exp`, `iat` and `auth_time`, in seconds (60 by default).
        public var clockSkew: TimeInterval
        /// The algorithm registered for the client (`id_token_signed_response_alg`); when `nil`,
        /// any the provider advertises (`id_token_signing_alg_values_supported`), else RS256.
        public var expectedAlgorithm: String?
        /// Whether HS256/384/512 tokens, signed with the client secret, are accepted; `false`
        /// by default, and never without a secret.
        public var allowsHMAC: Bool
        /// Audiences other than the client that may appear in `aud`; by default a token with any
        /// other audience is rejected (Core §3.1.3.7 rule 3).
        public var trustedAudiences: Set<String>
        /// How long before `now` the `iat` of a new sign-in's ID token may be, in seconds (Core
        /// §3.1.3.7 rule 10 leaves the range to the client): a provider mints it when it answers,
        /// so an older one is a replayed or forged token. One hour by default; `nil` accepts any.
        /// Not applied to ID tokens from a refresh, which some providers hand back unchanged.
        public var maximumIssuedAtAge: TimeInterval?

        /// Creates options.
        public init(
            clockSkew: TimeInterval = 60, expectedAlgorithm: String? = nil, allowsHMAC: Bool = false,
            trustedAudiences: Set<String> = [], maximumIssuedAtAge: TimeInterval? = 3600
        ) {
            self.clockSkew = clockSkew
            self.expectedAlgorithm = expectedAlgorithm
            self.allowsHMAC = allowsHMAC
            self.trustedAudiences = trustedAudiences
            self.maximumIssuedAtAge = maximumIssuedAtAge
        }
    }

    /// The provider's issuer identifier.
    public let issuer: String
    /// The client's `client_id`.
    public let clientID: String
    /// The provider's signing keys.
    public let keys: JSONWebKeySet
    /// The algorithms the provider advertises (`id_token_signing_alg_values_supported`).
    public let advertisedAlgorithms: [String]
    /// The options.
    public var options: Options
    private let clientSecret: String?

    /// Creates a validator.
    ///
    /// - Parameters:
    ///   - issuer: The provider's issuer identifier; `iss` must equal it.
    ///   - clientID: The client's `client_id`; `aud` must contain it.
    ///   - keys: The provider's signing keys.
    ///   - advertisedAlgorithms: The provider's `id_token_signing_alg_values_supported`.
    ///   - clientSecret: The client secret, for HS* tokens when ``Options/allowsHMAC``.
    ///   - options: The validation settings; strict by default.
    public init(
        issuer: String, clientID: String, keys: JSONWebKeySet, advertisedAlgorithms: [String] = ["RS256"],
        clientSecret: String? = nil, options: Options = Options()
    ) {
        self.issuer = issuer
        self.clientID = clientID
        self.keys = keys
        self.advertisedAlgorithms = advertisedAlgorithms
        self.clientSecret = clientSecret
        self.options = options
    }

    /// Validates `idToken` at `now` and returns its claims.
    ///
    /// - Throws: ``IDTokenValidationError`` naming the first rule that failed.
    public func validate(_ idToken: String, expecting expected: IDTokenExpectations = IDTokenExpectations(), now: Date)
        async throws -> IDTokenClaims
    {
        // Rule 1: an encrypted token would be decrypted here; they are refused as malformed.
        let jws = try CompactJWS(idToken)
        let claims = try IDTokenClaims(jws.claims)
        let skew = options.clockSkew

        // Rule 2: iss exactly equals the issuer.
        guard claims.issuer == issuer else {
            throw IDTokenValidationError(.issuer, "iss is '\(claims.issuer)', not the issuer '\(issuer)'.")
        }
        // Rule 3: aud contains the client; no audience that is not trusted.
        guard claims.audiences.contains(clientID) else {
            throw IDTokenValidationError(
                .audience, "aud \(claims.audiences) does not contain the client '\(clientID)'.")
        }
        let untrusted = claims.audiences.filter { $0 != clientID && !options.trustedAudiences.contains($0) }
        guard untrusted.isEmpty else {
            throw IDTokenValidationError(.audience, "aud also names \(untrusted), which the client does not trust.")
        }
        // Rule 4: several audiences need azp.
        if claims.audiences.count > 1 && claims.authorizedParty == nil {
            throw IDTokenValidationError(.authorizedParty, "aud names several audiences and there is no azp.")
        }
        // Rule 5: azp, when present, is the client.
        if let azp = claims.authorizedParty, azp != clientID {
            throw IDTokenValidationError(.authorizedParty, "azp is '\(azp)', not the client '\(clientID)'.")
        }
        // Rules 6-8: the alg is the expected one; the signature verifies with the provider's key
        // (or, for HS*, the client secret).
        let algorithm = try checkedAlgorithm(jws)
        let verifier = try await self.verifier(for: jws, algorithm: algorithm)
        // A verification that throws (a key the crypto library refuses late) is a bad signature
        // too: every failure here is this rule's, typed.
        guard (try? verifier.verify(jws.signature, signs: jws.signingInput)) == true else {
            throw IDTokenValidationError(
                .signature, "The signature does not verify with the provider's \(algorithm) key.")
        }
        // Rule 9: not expired.
        guard now < claims.expiresAt.addingTimeInterval(skew) else {
            throw IDTokenValidationError(
                .expired, "exp passed \(Int(now.timeIntervalSince(claims.expiresAt))) s ago (skew \(Int(skew)) s).")
        }
        // Rule 10: not issued in the future...
        guard claims.issuedAt <= now.addingTimeInterval(skew) else {
            throw IDTokenValidationError(
                .issuedAt,
                "iat is \(Int(claims.issuedAt.timeIntervalSince(now))) s in the future (skew \(Int(skew)) s).")
        }
        // ... nor too long ago for a new sign-in (the client's range).
        if expected.previous == nil, let maximum = options.maximumIssuedAtAge {
            let age = now.timeIntervalSince(claims.issuedAt)
            guard age <= maximum + skew else {
                throw IDTokenValidationError(
                    .issuedAt, "iat is \(Int(age)) s in the past, more than the \(Int(maximum)) s a new sign-in allows."
                )
            }
        }
        // Rule 11: the nonce sent comes back.
        if let nonce = expected.nonce {
            guard let received = claims.nonce else {
                throw IDTokenValidationError(.nonce, "The request sent a nonce and the token has none.")
            }
            guard constantTimeEqual(received, nonce) else {
                throw IDTokenValidationError(.nonce, "The token's nonce is not the one the request sent.")
            }
        } else if expected.previous == nil, claims.nonce != nil {
            throw IDTokenValidationError(.nonce, "The token has a nonce although the request sent none.")
        }
        // Rule 12: the acr asked for, when one was (a step-up); otherwise the application's to judge.
        if !expected.acrValues.isEmpty {
            guard let acr = claims.raw["acr"]?.stringValue, expected.acrValues.contains(acr) else {
                throw IDTokenValidationError(
                    .acr,
                    "acr_values \(expected.acrValues.joined(separator: " ")) was asked for and the token's acr is "
                        + (claims.raw["acr"]?.stringValue.map { "'\($0)'" } ?? "missing") + ".")
            }
        }
        if let subject = expected.subject, claims.subject != subject {
            throw IDTokenValidationError(.subject, "The new sign-in names another user (sub) than the session's.")
        }
        // Rule 13: max_age needs a recent enough auth_time.
        if let maxAge = expected.maxAge {
            guard let authTime = claims.authTime else {
                throw IDTokenValidationError(.authTime, "max_age was asked for and the token has no auth_time.")
            }
            guard now.timeIntervalSince(authTime) <= maxAge + skew else {
                throw IDTokenValidationError(
                    .authTime,
                    "auth_time is \(Int(now.timeIntervalSince(authTime))) s ago, more than max_age \(Int(maxAge)) s.")
            }
        }
        // §3.1.3.8, §3.3.2.11: at_hash and c_hash, when present, match.
        try checkHash("at_hash", of: expected.accessToken, in: claims, algorithm: algorithm)
        try checkHash("c_hash", of: expected.code, in: claims, algorithm: algorithm)
        // §12.2: a refreshed ID token belongs to the same session.
        if let previous = expected.previous {
            guard claims.issuer == previous.issuer, claims.subject == previous.subject else {
                throw IDTokenValidationError(.subject, "The refreshed ID token names another iss or sub.")
            }
            guard Set(claims.audiences) == Set(previous.audiences) else {
                throw IDTokenValidationError(.audience, "The refreshed ID token names other audiences.")
            }
            if let before = previous.authTime, let after = claims.authTime, before != after {
                throw IDTokenValidationError(.authTime, "The refreshed ID token has another auth_time.")
            }
        }
        return claims
    }

    /// Rules 6-8: the header's alg, checked before any key is looked at.
    private func checkedAlgorithm(_ jws: CompactJWS) throws -> String {
        guard let algorithm = jws.algorithm else {
            throw IDTokenValidationError(.algorithm, "The header has no alg.")
        }
        guard algorithm.lowercased() != "none" else {
            throw IDTokenValidationError(.algorithm, "alg is none: unsigned ID tokens are refused.")
        }
        if case .array(let critical)? = jws.header["crit"], !critical.isEmpty {
            throw IDTokenValidationError(
                .algorithm, "The header has critical extensions (crit) this client does not know.")
        }
        let allowed =
            options.expectedAlgorithm.map { [$0] }
            ?? (advertisedAlgorithms.isEmpty ? ["RS256"] : advertisedAlgorithms).filter { $0.lowercased() != "none" }
        guard allowed.contains(algorithm) else {
            throw IDTokenValidationError(
                .algorithm, "alg is \(algorithm); the client expects \(allowed.joined(separator: " or ")).")
        }
        if algorithm.hasPrefix("HS") {
            guard options.allowsHMAC, clientSecret != nil else {
                throw IDTokenValidationError(
                    .algorithm,
                    "alg is \(algorithm) (HMAC), which is accepted only when asked for, with the client secret.")
            }
        }
        return algorithm
    }

    private func verifier(for jws: CompactJWS, algorithm: String) async throws -> any JWTAlgorithm {
        guard algorithm.hasPrefix("HS") else {
            return try await keys.verifier(keyID: jws.keyID, algorithm: algorithm)
        }
        guard let clientSecret else { throw IDTokenValidationError(.algorithm, "No client secret for \(algorithm).") }
        // RFC 7518 §3.2: the key must be at least as long as the hash (jwt-kit asserts it too).
        guard clientSecret.utf8.count >= 32 else {
            throw IDTokenValidationError(
                .algorithm, "The client secret is shorter than 32 bytes, too short for \(algorithm).")
        }
        let digest: DigestAlgorithm
        switch algorithm {
        case "HS256": digest = .sha256
        case "HS384": digest = .sha384
        case "HS512": digest = .sha512
        default: throw IDTokenValidationError(.algorithm, "alg \(algorithm) is not supported.")
        }
        let collection = JWTKeyCollection()
        await collection.add(hmac: HMACKey(from: clientSecret), digestAlgorithm: digest, kid: "client-secret")
        return try await collection.getKey(for: "client-secret", alg: algorithm)
    }

    /// The left half of the hash of `value` (with the hash of `algorithm`), base64url-encoded.
    static func leftHalfHash(of value: String, algorithm: String) -> String {
        let bytes = Data(value.utf8)
        let digest: [UInt8]
        if algorithm.hasSuffix("384") {
            digest = Array(SHA384.hash(data: bytes))
        } else if algorithm.hasSuffix("512") || algorithm == "EdDSA" {
            digest = Array(SHA512.hash(data: bytes))
        } else {
            digest = Array(SHA256.hash(data: bytes))
        }
        return Base64URL.encode(Array(digest.prefix(digest.count / 2)))
    }

    private func checkHash(_ name: String, of value: String?, in claims: IDTokenClaims, algorithm: String) throws {
        guard let claim = claims.raw[name] else { return }
        guard let hash = claim.stringValue else {
            throw IDTokenValidationError(.tokenHash, "\(name) is not a string.")
        }
        guard let value else { return }
        guard hash == Self.leftHalfHash(of: value, algorithm: algorithm) else {
            throw IDTokenValidationError(
                .tokenHash, "\(name) does not match the \(name == "at_hash" ? "access token" : "code").")
        }
    }
}
