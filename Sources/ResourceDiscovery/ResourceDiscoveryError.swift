import Foundation

/// Why a resource's metadata, or its authorization server's, could not be used.
///
/// Switch on ``code``; the set of codes can grow.
public struct ResourceDiscoveryError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The document's `resource` is not the resource asked for (RFC 9728 §3.3).
        public static let resourceMismatch = Code("resource mismatch")
        /// A metadata URL is plain http to a host that is not loopback.
        public static let insecureURL = Code("insecure URL")
        /// No document was found at any of the URLs tried.
        public static let notFound = Code("not found")
        /// The document is not metadata: a missing or mistyped field.
        public static let invalidMetadata = Code("invalid metadata")
        /// The authorization server's metadata names another issuer than the one asked for.
        public static let issuerMismatch = Code("issuer mismatch")
        /// The authorization server's metadata does not list `S256` in
        /// `code_challenge_methods_supported`: PKCE cannot be relied on, so no browser is opened.
        public static let pkceUnsupported = Code("PKCE S256 unsupported")
        /// The resource's metadata names no authorization server.
        public static let noAuthorizationServer = Code("no authorization server")
        /// The user must sign in (or step up), and this context cannot ask: a server or a
        /// non-interactive command. The error says what is required.
        public static let interactionRequired = Code("interaction required")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// What happened, for people; URLs without query.
    public let message: String

    /// ``Code/insecureURL`` for `url`: neither https nor http to a loopback address.
    package static func insecure(_ url: URL) -> ResourceDiscoveryError {
        ResourceDiscoveryError(
            .insecureURL, "Refusing to authorize \(url.redactedForDisplay): use https (or http to a loopback address).")
    }

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `ResourceDiscoveryError(code): message`.
    public var description: String { "ResourceDiscoveryError(\(code)): \(message)" }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
