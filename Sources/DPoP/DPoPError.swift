import Foundation

/// Why a DPoP proof could not be made.
///
/// Switch on ``code``; the set of codes can grow. A server's refusal of a proof is an
/// `OAuthError` with code `invalid_dpop_proof` instead.
public struct DPoPError: Error, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The key a token is bound to cannot be loaded (gone, from another device, or not a key).
        public static let keyUnavailable = Code("key unavailable")
        /// A restored key is not the key the token was bound to (its thumbprint differs).
        public static let keyMismatch = Code("key mismatch")
        /// The request cannot carry a proof (no URL, or not http or https).
        public static let invalidRequest = Code("invalid request")
        /// The key failed to sign.
        public static let signingFailed = Code("signing failed")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// What went wrong, for people; never a key or a token.
    public let message: String
    /// The error behind this one.
    public let underlyingError: (any Error)?

    init(_ code: Code, _ message: String, underlyingError: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlyingError = underlyingError
    }

    /// The code and message.
    public var description: String { "DPoPError(\(code)): \(message)" }
}
