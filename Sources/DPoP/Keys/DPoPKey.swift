import Foundation

/// A key that signs DPoP proofs (RFC 9449): the key tokens are bound to.
///
/// ``SoftwareDPoPKey`` is the implementation in this package (P-256 or Ed25519, signed by
/// jwt-kit). An Apple app can conform a Secure Enclave key: its `algorithm` is `ES256`, its
/// public JWK comes from the key's public key, ``sign(_:)`` returns the raw `r || s` signature,
/// and ``storedRepresentation`` is the key's data representation, which only that device's
/// Secure Enclave can use.
public protocol DPoPKey: Sendable {
    /// The JWS algorithm, e.g. `ES256`, `EdDSA`.
    var algorithm: String { get }
    /// The public key as a JWK with its required members only (for EC: `crv`, `kty`, `x`, `y`):
    /// what the proof's header carries and the thumbprint (RFC 7638) is computed from.
    var publicJWK: [String: String] { get }
    /// Signs a JWS signing input (`BASE64URL(header) || '.' || BASE64URL(payload)`) and returns the
    /// signature as JWS encodes it (for ES256, `r || s`, 64 bytes).
    func sign(_ signingInput: Data) throws -> Data
    /// What a token store keeps to get this key back from its ``DPoPKeySource``. Secret.
    var storedRepresentation: Data { get }
}

/// Where a ``DPoPProver`` gets keys: a new one for each session, and a stored one back for a
/// restored session.
public protocol DPoPKeySource: Sendable {
    /// A new key, for a session that starts.
    func makeKey() async throws -> any DPoPKey
    /// The key that `storedRepresentation` (from ``DPoPKey/storedRepresentation``) stands for.
    ///
    /// - Throws: when the key is gone (e.g. a hardware key was deleted, or the representation is
    ///   from another device); a token bound to it is then not used.
    func restoreKey(from storedRepresentation: Data, algorithm: String) async throws -> any DPoPKey
}

/// The key source of an app that supplies one key for every session (e.g. a key it keeps in the
/// Secure Enclave itself).
public struct FixedDPoPKeySource: DPoPKeySource {
    /// The key.
    public let key: any DPoPKey

    /// Creates the source.
    public init(key: any DPoPKey) {
        self.key = key
    }

    /// ``key``.
    public func makeKey() async throws -> any DPoPKey { key }

    /// ``key``, when `storedRepresentation` is its own.
    public func restoreKey(from storedRepresentation: Data, algorithm: String) async throws -> any DPoPKey {
        guard storedRepresentation == key.storedRepresentation, algorithm == key.algorithm else {
            throw DPoPError(.keyUnavailable, "The stored key is not the key this app supplies.")
        }
        return key
    }
}
