import Foundation

/// Why a client could not be registered, or why a registration was not used.
///
/// An RFC 7591 §3.2.2 error body (`invalid_redirect_uri`, `invalid_client_metadata`, …) arrives
/// as `OAuthError`, with the server's `error_description`; a reply that is not one (too large,
/// not JSON, an unexpected status) as ``TokenEndpointError``. This error covers what the client
/// itself refuses.
public struct ClientRegistrationError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// The class of failure. More may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The client's own metadata breaks RFC 7591 or RFC 8252; nothing was sent.
        public static let invalidClientMetadata = Code("invalid client metadata")
        /// The server's reply is not a registration: no `client_id`, a member of the wrong type,
        /// or metadata that contradicts what was asked (another redirect URI, another method).
        public static let invalidResponse = Code("invalid registration response")
        /// The server offers no way this client can register: no `registration_endpoint`, no
        /// Client ID Metadata Document support, and no pre-registered client for its issuer.
        public static let unavailable = Code("registration unavailable")
        /// The server supports none of the token endpoint authentication methods this client can
        /// use.
        public static let unsupportedAuthenticationMethod = Code("unsupported authentication method")
        /// A Client ID Metadata Document URL or document that the draft does not allow.
        public static let invalidMetadataDocument = Code("invalid client ID metadata document")
        /// The registration endpoint is not https (or http to a loopback address).
        public static let insecureEndpoint = Code("insecure endpoint")
        /// The description of the code.
        public var description: String { name }
    }

    /// The class of failure.
    public let code: Code
    /// What happened, in one sentence; never a secret.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `ClientRegistrationError(<code>): <message>`.
    public var description: String { "ClientRegistrationError(\(code)): \(message)" }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
