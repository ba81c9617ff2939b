import Foundation

/// Base64url without padding (RFC 7515 §2).
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes `bytes` from contiguous memory (a `Data`, a digest) without iterating it byte by
    /// byte through its generic iterator.
    static func encode(_ bytes: some ContiguousBytes) -> String {
        bytes.withUnsafeBytes { encode(sequence: $0) }
    }

    /// Encodes `bytes`, three bytes to four characters, without padding.
    static func encode(sequence bytes: some Sequence<UInt8>) -> String {
        var output = [UInt8]()
        output.reserveCapacity(bytes.underestimatedCount * 4 / 3 + 3)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
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
