import Foundation

/// The key a sender-constrained token is bound to (DPoP, RFC 9449), as a ``TokenStore`` keeps it
/// with the token: a restored session signs its proofs with the same key.
///
/// ``storedKey`` is secret (a private key, or a reference to one kept in hardware); descriptions
/// never show it.
public struct BoundKey: Codable, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The key's JWK SHA-256 thumbprint (RFC 7638), base64url: the token's `cnf.jkt`.
    public var thumbprint: String
    /// The JWS algorithm the key signs with, e.g. `ES256`.
    public var algorithm: String
    /// What the key source needs to load the key again: the private key of a software key, the
    /// data representation of a Secure Enclave key.
    public var storedKey: Data

    /// Creates a binding.
    public init(thumbprint: String, algorithm: String, storedKey: Data) {
        self.thumbprint = thumbprint
        self.algorithm = algorithm
        self.storedKey = storedKey
    }

    private enum CodingKeys: String, CodingKey {
        case thumbprint = "jkt"
        case algorithm = "alg"
        case storedKey = "key"
    }

    /// The thumbprint and algorithm; the key is not shown.
    public var description: String {
        "BoundKey(jkt: \(thumbprint), alg: \(algorithm), key: \(Redaction.placeholder))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror without the key.
    public var customMirror: Mirror {
        Mirror(self, children: ["thumbprint": thumbprint, "algorithm": algorithm], displayStyle: .struct)
    }
}
