// DPoP's "Keys in the Secure Enclave" snippet. It uses CryptoKit's Secure Enclave and the
// keychain, so it is compiled where those exist (an iOS or macOS build of this package), not on
// Linux.
#if canImport(CryptoKit) && canImport(Security) && (os(iOS) || os(macOS) || os(visionOS))
import AuthenticatedRequests
import CryptoKit
import DPoP
import Foundation

/// A DPoP key that never leaves the Secure Enclave.
struct EnclaveKey: DPoPKey {
    let key: SecureEnclave.P256.Signing.PrivateKey
    var algorithm: String { "ES256" }
    var publicJWK: [String: String] {
        let point = key.publicKey.x963Representation  // 0x04 || x || y
        return ["kty": "EC", "crv": "P-256", "x": base64URL(point[1...32]), "y": base64URL(point[33...64])]
    }
    func sign(_ signingInput: Data) throws -> Data {
        try key.signature(for: signingInput).rawRepresentation  // r || s, as JWS wants
    }
    var storedRepresentation: Data { key.dataRepresentation }  // a handle, not the key
}

/// Base64url without padding (RFC 7515 §2).
func base64URL(_ bytes: Data) -> String {
    bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

/// A new enclave key for each session; the stored handle brings it back on the same device.
struct EnclaveKeySource: DPoPKeySource {
    func makeKey() async throws -> any DPoPKey {
        EnclaveKey(key: try SecureEnclave.P256.Signing.PrivateKey())
    }
    func restoreKey(from storedRepresentation: Data, algorithm: String) async throws -> any DPoPKey {
        EnclaveKey(key: try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: storedRepresentation))
    }
}

/// An app's authenticator whose tokens are bound to Secure Enclave keys.
func enclaveBoundAuthenticator() throws -> OAuthAuthenticator {
    OAuthAuthenticator(
        store: try KeychainTokenStore(service: "com.example.app.tokens"),
        configuration: .init(proofOfPossession: DPoPProver(keySource: EnclaveKeySource())))
}
#endif
