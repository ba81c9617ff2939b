/// Why an OpenID Connect step other than ID token validation failed.
public struct OpenIDConnectError: Error, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The provider lacks the endpoint the step needs (`userinfo_endpoint`,
        /// `end_session_endpoint`).
        public static let missingEndpoint = Code("missing endpoint")
        /// The UserInfo response is neither a JSON object nor a signed JWT (encrypted UserInfo
        /// responses are not supported), is too large, or its status is an error.
        public static let userInfoFailed = Code("userinfo failed")
        /// A signed UserInfo response failed a check of Core §5.3.2: its signature (with the
        /// provider's keys and an advertised algorithm), its `iss` or its `aud`. Nothing of it was used.
        public static let untrustedUserInfo = Code("untrusted userinfo")
        /// An aggregated or distributed claim source (Core §5.6.2) could not be read or trusted:
        /// the endpoint failed, its JWT does not verify with its issuer's keys, it is about
        /// another subject, or it lacks a claim UserInfo points to it for. No claim of it was used.
        public static let claimSourceFailed = Code("claim source failed")
        /// The UserInfo `sub` is not the ID token's (Core §5.3.2): the response was refused.
        public static let subjectMismatch = Code("subject mismatch")
        /// The session has no ID token (it did not sign in with OpenID Connect).
        public static let noIDToken = Code("no ID token")
        /// The provider's redirect after logout did not carry the `state` sent.
        public static let logoutStateMismatch = Code("logout state mismatch")
        /// A client secret too short to be an HMAC key (RFC 7518 §3.2: at least 32 bytes).
        public static let weakSecret = Code("weak secret")
        /// A client assertion's audience is the authorization server's issuer identifier
        /// (RFC 10070), and the client authentication knows none: nothing was signed or sent.
        public static let missingIssuer = Code("missing issuer")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// What happened, for people; never a token.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `OpenIDConnectError(code): message`.
    public var description: String { "OpenIDConnectError(\(code)): \(message)" }
}
