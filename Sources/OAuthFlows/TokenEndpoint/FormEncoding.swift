import Foundation

/// `application/x-www-form-urlencoded` as RFC 6749 Appendix B requires: UTF-8, every byte
/// outside `A-Z a-z 0-9 - . _ *` percent-encoded, space as `+`. Also used (with `%20` for space)
/// for the authorization request's query, so every reserved character arrives as given.
package enum FormEncoding {
    /// Encodes one name or value.
    package static func encode(_ string: String, spaceAsPlus: Bool = true) -> String {
        var result = ""
        result.reserveCapacity(string.utf8.count)
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "*"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " ") where spaceAsPlus:
                result.append("+")
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                result += byte < 16 ? "%0\(hex)" : "%\(hex)"
            }
        }
        return result
    }

    /// Encodes name-value pairs in order, joined with `&`; with `spaceAsPlus` `false`, for a URL's
    /// query, where every reserved character is encoded so that values arrive exactly as given.
    package static func encode(_ parameters: [(String, String)], spaceAsPlus: Bool = true) -> String {
        parameters.map { "\(encode($0.0, spaceAsPlus: spaceAsPlus))=\(encode($0.1, spaceAsPlus: spaceAsPlus))" }
            .joined(separator: "&")
    }
}
