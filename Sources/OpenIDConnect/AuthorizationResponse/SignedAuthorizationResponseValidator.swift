import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import JWTKit

/// Validates JWT-secured authorization responses (JARM, `response_mode=jwt`) rule by rule, in the
/// order of JARM §4.4, with the provider's published keys; nothing of a response is used before
/// every rule passed.
///
/// ```swift
/// let session = try await oidc.signIn(
///     redirectURI: redirectURI, userAgent: LoopbackUserAgent(), configuring: authenticator,
///     signedAuthorizationResponses: true)
/// ```
public struct SignedAuthorizationResponseValidator: SignedAuthorizationResponseVerifier {
    /// The provider's issuer: `iss` must equal it.
    public let issuer: String
    /// The provider's keys.
    public let keys: JSONWebKeySet
    /// The algorithms accepted: the provider's `authorization_signing_alg_values_supported`, else
    /// RS256, PS256 and ES256; never `none` or an HMAC.
    public let algorithms: [String]
    /// The clock skew allowed for `exp`, in seconds.
    public let clockSkew: TimeInterval
    let clock: any WallClock

    /// A validator for `provider`'s responses.
    public init(provider: OpenIDProvider, clockSkew: TimeInterval = 60, clock: any WallClock = SystemWallClock()) {
        let advertised =
            provider.metadata.fields["authorization_signing_alg_values_supported"]?.arrayValue?.compactMap(
                \.stringValue)
            ?? []
        self.issuer = provider.issuer
        self.keys = provider.keys
        self.algorithms = (advertised.isEmpty ? ["RS256", "PS256", "ES256"] : advertised)
            .filter { $0.lowercased() != "none" && !$0.hasPrefix("HS") }
        self.clockSkew = clockSkew
        self.clock = clock
    }

    /// The response's parameters after its checks: the JWS is well formed and its `alg` one of
    /// ``algorithms``; `iss` is the issuer; `aud` names the client; `exp` has not passed; the
    /// signature verifies with the provider's key.
    ///
    /// - Throws: ``SignedAuthorizationResponseError`` naming the rule that failed.
    public func parameters(ofSignedResponse response: String, clientID: String) async throws -> [String: String] {
        let jws: CompactJWS
        do {
            jws = try CompactJWS(response)
        } catch {
            throw SignedAuthorizationResponseError(.malformed, "The response is not a signed JWT in compact form.")
        }
        guard let algorithm = jws.algorithm, algorithms.contains(algorithm) else {
            throw SignedAuthorizationResponseError(
                .algorithm,
                "alg is \(jws.algorithm ?? "absent"); the client accepts \(algorithms.joined(separator: ", ")).")
        }
        // JARM §4.4: iss, aud, exp, then the signature.
        guard jws.claims["iss"]?.stringValue == issuer else {
            throw SignedAuthorizationResponseError(.issuer, "iss is not the issuer '\(issuer)'.")
        }
        let audiences: [String] =
            switch jws.claims["aud"] {
            case .string(let audience)?: [audience]
            case .array(let values)?: values.compactMap(\.stringValue)
            default: []
            }
        guard audiences.contains(clientID) else {
            throw SignedAuthorizationResponseError(.audience, "aud does not name the client '\(clientID)'.")
        }
        guard case .number(let expiry)? = jws.claims["exp"], expiry.isFinite else {
            throw SignedAuthorizationResponseError(.expired, "The response has no exp.")
        }
        guard clock.now.timeIntervalSince1970 < expiry + clockSkew else {
            throw SignedAuthorizationResponseError(.expired, "The response expired.")
        }
        let verifier: any JWTAlgorithm
        do {
            verifier = try await keys.verifier(keyID: jws.keyID, algorithm: algorithm)
        } catch {
            throw SignedAuthorizationResponseError(.signature, "No key of the provider fits the response: \(error)")
        }
        guard (try? verifier.verify(jws.signature, signs: jws.signingInput)) == true else {
            throw SignedAuthorizationResponseError(.signature, "The signature does not verify with the provider's key.")
        }
        return Self.parameters(of: jws.claims)
    }

    /// The string claims but `aud` and `exp`: `code`, `state`, `iss`, `error`, …
    package static func parameters(of claims: [String: JSONValue]) -> [String: String] {
        claims.compactMapValues(\.stringValue).filter { $0.key != "aud" }
    }
}

/// Why a signed authorization response (JARM) was refused; nothing in it was used.
public struct SignedAuthorizationResponseError: Error, CustomStringConvertible {
    /// The rule that failed.
    public struct Rule: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// Not a JWS in compact serialization with JSON header and claims.
        public static let malformed = Rule("malformed")
        /// `alg` is `none`, an HMAC, or not one the provider advertises.
        public static let algorithm = Rule("alg")
        /// `iss` is not the issuer.
        public static let issuer = Rule("iss")
        /// `aud` does not name the client.
        public static let audience = Rule("aud")
        /// `exp` is missing or has passed.
        public static let expired = Rule("exp")
        /// No provider key fits, or the signature does not verify.
        public static let signature = Rule("signature")
        /// The rule's name.
        public var description: String { name }
    }

    /// The rule that failed.
    public let rule: Rule
    /// What was wrong, without the response.
    public let message: String

    init(_ rule: Rule, _ message: String) {
        self.rule = rule
        self.message = message
    }

    /// The rule and the message.
    public var description: String { "SignedAuthorizationResponseError(\(rule)): \(message)" }
}
