import Foundation

/// Base64url without padding (RFC 7515 §2), byte by byte, with no string rewriting: it runs for
/// every part of every ID token, DPoP proof and thumbprint. Shared by the JOSE code of the
/// OpenIDConnect and DPoP modules.
package enum Base64URL {
    /// Decodes `text`; `nil` for characters outside the alphabet, padding, or a length no
    /// encoding has.
    package static func decode(_ text: Substring) -> Data? {
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

    /// Encodes `bytes` from contiguous memory (a `Data`, a digest, an array) without iterating it
    /// through a generic iterator.
    package static func encode(_ bytes: some ContiguousBytes) -> String {
        bytes.withUnsafeBytes { buffer in
            var output = [UInt8]()
            output.reserveCapacity((buffer.count * 4 + 2) / 3)
            var accumulator: UInt32 = 0
            var bits = 0
            for byte in buffer {
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
}
