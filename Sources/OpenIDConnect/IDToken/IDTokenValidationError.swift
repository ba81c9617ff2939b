/// Why an ID token was rejected: the rule of OpenID Connect Core §3.1.3.7 (or §3.1.3.8, §3.3.2.11,
/// §12.2) it broke. The message names the rule and the values compared, never the token.
public struct IDTokenValidationError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// The rule that failed.
    public struct Rule: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// Not a signed JWT in compact serialization, or claims of the wrong type.
        public static let malformed = Rule("malformed")
        /// The response had no `id_token` although `openid` was asked for.
        public static let missing = Rule("missing ID token")
        /// Rule 6-8: the header's `alg` is `none`, not the one registered or advertised, or HS*
        /// without being asked for.
        public static let algorithm = Rule("alg")
        /// Rule 6: no key of the provider's JWKS fits the header (`kid`, `kty`, `alg`, `use`),
        /// also after one re-fetch.
        public static let unknownKey = Rule("unknown key")
        /// Rule 6: the key set names the token's `kid` more than once with keys that fit, so the
        /// key to verify with is ambiguous; the token is refused rather than verified with a guess.
        public static let ambiguousKey = Rule("ambiguous key")
        /// Rule 6: the provider's key that fits the header cannot be used: malformed, a point
        /// that is not on its curve or of another curve's size, or an RSA key shorter than
        /// 2,048 bits.
        public static let invalidKey = Rule("invalid key")
        /// Rule 6: the signature does not verify with the provider's key.
        public static let signature = Rule("signature")
        /// Rule 2: `iss` is not the issuer.
        public static let issuer = Rule("iss")
        /// Rule 3: `aud` does not contain the client, or contains an audience not trusted.
        public static let audience = Rule("aud")
        /// Rules 4-5: several audiences and no `azp`, or an `azp` that is not the client.
        public static let authorizedParty = Rule("azp")
        /// Rule 9: `exp` has passed (beyond the allowed clock skew).
        public static let expired = Rule("exp")
        /// Rule 10: `iat` is in the future (beyond the allowed clock skew), or missing.
        public static let issuedAt = Rule("iat")
        /// Rule 11: `nonce` is not the one sent, or missing.
        public static let nonce = Rule("nonce")
        /// Rule 12: `acr_values` was asked for (a step-up) and `acr` is none of them.
        public static let acr = Rule("acr")
        /// Rule 13: `max_age` was asked for and `auth_time` is missing or too old.
        public static let authTime = Rule("auth_time")
        /// §3.1.3.8 / §3.3.2.11: `at_hash` or `c_hash` does not match the access token or code.
        public static let tokenHash = Rule("at_hash/c_hash")
        /// `sub` is missing, or (§12.2) differs from the session's.
        public static let subject = Rule("sub")
        /// The rule's name, as the specification spells the claim.
        public var description: String { name }
    }

    /// The rule that failed.
    public let rule: Rule
    /// What failed, for people; never the token.
    public let message: String

    init(_ rule: Rule, _ message: String) {
        self.rule = rule
        self.message = message
    }

    /// `IDTokenValidationError(iss): message`.
    public var description: String { "IDTokenValidationError(\(rule)): \(message)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}
