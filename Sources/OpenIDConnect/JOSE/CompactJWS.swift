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

/// Base64url without padding (RFC 7515 §2), byte by byte (no string rewriting: it runs for every
/// part of every token).
enum Base64URL {
    /// Decodes `text`; `nil` for characters outside the alphabet, padding, or a length no
    /// encoding has.
    static func decode(_ text: Substring) -> Data? {
        var bytes = [UInt8]()
        bytes.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // 2 or 4 leftover bits must be zero; 6 leftover bits (a length of 4n+1) is no encoding.
        guard bits < 6, accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return Data(bytes)
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes `data`.
    static func encode(_ data: some DataProtocol) -> String {
        var output = [UInt8]()
        output.reserveCapacity((data.count * 4 + 2) / 3)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in data {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                output.append(alphabet[Int(accumulator >> UInt32(bits) & 0x3F)])
            }
        }
        if bits > 0 { output.append(alphabet[Int(accumulator << UInt32(6 - bits) & 0x3F)]) }
        return String(decoding: output, as: UTF8.self)
    }
}
