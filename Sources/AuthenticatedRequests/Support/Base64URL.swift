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

    /// Encodes `bytes` from contiguous memory (a `Data`, a digest, an array) straight into the
    /// string's storage, three bytes at a time: a DPoP proof encodes three values per request.
    package static func encode(_ bytes: some ContiguousBytes) -> String {
        bytes.withUnsafeBytes { input in
            let count = (input.count * 4 + 2) / 3
            guard count > 0 else { return "" }
            return String(unsafeUninitializedCapacity: count) { output in
                var written = 0
                var index = 0
                while index + 3 <= input.count {
                    let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                    output[written] = character(group >> 18)
                    output[written + 1] = character(group >> 12)
                    output[written + 2] = character(group >> 6)
                    output[written + 3] = character(group)
                    written += 4
                    index += 3
                }
                switch input.count - index {
                case 1:
                    let group = UInt32(input[index]) << 16
                    output[written] = character(group >> 18)
                    output[written + 1] = character(group >> 12)
                    written += 2
                case 2:
                    let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
                    output[written] = character(group >> 18)
                    output[written + 1] = character(group >> 12)
                    output[written + 2] = character(group >> 6)
                    written += 3
                default:
                    break
                }
                return written
            }
        }
    }

    /// The base64url character of the low six bits of `value` (RFC 4648 §5).
    @inline(__always)
    private static func character(_ value: UInt32) -> UInt8 {
        let sextet = UInt8(truncatingIfNeeded: value & 0x3F)
        switch sextet {
        case 0..<26: return sextet &+ 65  // A-Z
        case 26..<52: return sextet &+ 71  // a-z
        case 52..<62: return sextet &- 4  // 0-9
        case 62: return 45  // -
        default: return 95  // _
        }
    }
}
