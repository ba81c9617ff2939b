import AuthenticatedRequests
import Foundation

/// A JWS in compact serialization (RFC 7515 §7.1), split and decoded but not verified: its
/// header and payload as JSON objects, and the bytes its signature covers.
struct CompactJWS: Sendable {
    /// The protected header.
    let header: [String: JSONValue]
    /// The payload's claims.
    let claims: [String: JSONValue]
    /// `BASE64URL(header) || '.' || BASE64URL(payload)`: what the signature signs.
    let signingInput: Data
    /// The signature's bytes.
    let signature: Data

    /// The header's `alg`.
    var algorithm: String? { header["alg"]?.stringValue }
    /// The header's `kid`.
    var keyID: String? { header["kid"]?.stringValue }

    /// Splits and decodes `token`.
    ///
    /// - Throws: ``IDTokenValidationError`` ``IDTokenValidationError/Rule/malformed`` for
    ///   anything but three base64url parts whose first two are JSON objects (a JWE, with five
    ///   parts, is refused: encrypted ID tokens are not supported).
    init(_ token: String) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw IDTokenValidationError(
                .malformed,
                parts.count == 5
                    ? "The ID token is encrypted (JWE); encrypted ID tokens are not supported."
                    : "The ID token is not a JWS in compact serialization (\(parts.count) parts, not 3).")
        }
        guard let headerBytes = Base64URL.decode(parts[0]), let payloadBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else {
            throw IDTokenValidationError(.malformed, "A part of the ID token is not base64url.")
        }
        guard let header = try? JSONValue(parsing: headerBytes).objectValue else {
            throw IDTokenValidationError(.malformed, "The ID token's header is not a JSON object.")
        }
        guard let claims = try? JSONValue(parsing: payloadBytes).objectValue else {
            throw IDTokenValidationError(.malformed, "The ID token's payload is not a JSON object.")
        }
        self.header = header
        self.claims = claims
        self.signingInput = Data(parts[0].utf8) + Data(".".utf8) + Data(parts[1].utf8)
        self.signature = signature
    }
}
