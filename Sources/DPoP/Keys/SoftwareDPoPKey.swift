import AuthenticatedRequests
import Crypto
import Foundation
import JWTKit

/// A DPoP key in memory, signed with by jwt-kit: P-256 (`ES256`, the default and what servers
/// support most) or Ed25519 (`EdDSA`).
///
/// Its ``storedRepresentation`` is the private key's raw bytes, so a token store keeps it with
/// the session (the file store with mode 0600, the PostgreSQL store encrypted, the Keychain).
public struct SoftwareDPoPKey: DPoPKey {
    /// The algorithms of software keys.
    public struct Algorithm: Hashable, Sendable {
        /// The JWS name.
        public let name: String
        /// `ES256`: ECDSA on P-256 with SHA-256.
        public static let es256 = Algorithm(name: "ES256")
        /// `EdDSA` with Ed25519.
        public static let edDSA = Algorithm(name: "EdDSA")
    }

    /// The JWS algorithm.
    public let algorithm: String
    /// The public JWK's required members.
    public let publicJWK: [String: String]
    /// The private key's raw bytes.
    public let storedRepresentation: Data
    private let signer: any JWTAlgorithm
    /// The P-256 key itself, for ES256: proofs are signed with swift-crypto directly (the
    /// signature jwt-kit makes, without its generic path: a proof is one signature per request).
    private let p256: P256.Signing.PrivateKey?

    /// A new random key.
    public static func generate(_ algorithm: Algorithm = .es256) async throws -> SoftwareDPoPKey {
        switch algorithm {
        case .edDSA: try await make(ed25519: Curve25519.Signing.PrivateKey())
        default: try await make(p256: P256.Signing.PrivateKey())
        }
    }

    /// The key whose raw private bytes are `storedRepresentation`.
    ///
    /// - Throws: ``DPoPError`` for bytes that are no key of `algorithm`.
    public static func restore(from storedRepresentation: Data, algorithm: String) async throws -> SoftwareDPoPKey {
        do {
            switch algorithm {
            case Algorithm.es256.name:
                return try await make(p256: P256.Signing.PrivateKey(rawRepresentation: storedRepresentation))
            case Algorithm.edDSA.name:
                return try await make(ed25519: Curve25519.Signing.PrivateKey(rawRepresentation: storedRepresentation))
            default:
                throw DPoPError(.keyUnavailable, "Software DPoP keys are ES256 or EdDSA, not \(algorithm).")
            }
        } catch let error as DPoPError {
            throw error
        } catch {
            throw DPoPError(
                .keyUnavailable, "The stored DPoP key is not a valid \(algorithm) key.", underlyingError: error)
        }
    }

    private static func make(p256 key: P256.Signing.PrivateKey) async throws -> SoftwareDPoPKey {
        let jwtKey = try ES256PrivateKey(backing: key)
        guard let (x, y) = jwtKey.parameters else {
            throw DPoPError(.keyUnavailable, "The P-256 key has no public coordinates.")
        }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: jwtKey)
        return SoftwareDPoPKey(
            algorithm: Algorithm.es256.name,
            publicJWK: ["kty": "EC", "crv": "P-256", "x": x, "y": y],
            storedRepresentation: key.rawRepresentation,
            signer: try await keys.getKey(), p256: key)
    }

    private static func make(ed25519 key: Curve25519.Signing.PrivateKey) async throws -> SoftwareDPoPKey {
        let keys = JWTKeyCollection()
        await keys.add(eddsa: EdDSA.PrivateKey(backing: key))
        return SoftwareDPoPKey(
            algorithm: Algorithm.edDSA.name,
            publicJWK: ["kty": "OKP", "crv": "Ed25519", "x": Base64URL.encode(key.publicKey.rawRepresentation)],
            storedRepresentation: key.rawRepresentation,
            signer: try await keys.getKey(), p256: nil)
    }

    private init(
        algorithm: String, publicJWK: [String: String], storedRepresentation: Data, signer: any JWTAlgorithm,
        p256: P256.Signing.PrivateKey?
    ) {
        self.algorithm = algorithm
        self.publicJWK = publicJWK
        self.storedRepresentation = storedRepresentation
        self.signer = signer
        self.p256 = p256
    }

    /// Signs `signingInput`: ES256 with swift-crypto (ECDSA P-256 over its SHA-256, the 64-byte
    /// `r || s` a JWS carries, as jwt-kit makes it), EdDSA through jwt-kit.
    public func sign(_ signingInput: Data) throws -> Data {
        if let p256 { return try p256.signature(for: signingInput).rawRepresentation }
        return Data(try signer.sign(signingInput))
    }
}

extension SoftwareDPoPKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The algorithm; the private key is not shown.
    public var description: String { "SoftwareDPoPKey(\(algorithm))" }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror without the private key.
    public var customMirror: Mirror { Mirror(self, children: ["algorithm": algorithm]) }
}

/// Generates a new ``SoftwareDPoPKey`` for every session, and restores stored ones.
public struct SoftwareDPoPKeySource: DPoPKeySource {
    /// The algorithm of new keys.
    public let algorithm: SoftwareDPoPKey.Algorithm

    /// Creates the source; `ES256` unless given.
    public init(algorithm: SoftwareDPoPKey.Algorithm = .es256) {
        self.algorithm = algorithm
    }

    /// A new random key.
    public func makeKey() async throws -> any DPoPKey {
        try await SoftwareDPoPKey.generate(algorithm)
    }

    /// The stored key.
    public func restoreKey(from storedRepresentation: Data, algorithm: String) async throws -> any DPoPKey {
        try await SoftwareDPoPKey.restore(from: storedRepresentation, algorithm: algorithm)
    }
}
