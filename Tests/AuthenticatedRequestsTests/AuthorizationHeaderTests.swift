import AuthenticatedRequests
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The authenticator writes its header without Foundation's `setValue` on Linux; these tests hold
/// it to `setValue`'s results.
struct AuthorizationHeaderTests {
    private let url = URL(string: "https://api.example.com/me")!

    private func authorizationFields(of request: URLRequest) -> [String] {
        (request.allHTTPHeaderFields ?? [:]).keys.filter { $0.lowercased() == "authorization" }
    }

    @Test func writesTheHeaderOnARequestWithoutHeaders() {
        var request = URLRequest(url: url)
        request.setAuthorization("Bearer abc.DEF-123_~+/=")
        #expect(request.value(forHTTPHeaderField: "authorization") == "Bearer abc.DEF-123_~+/=")
        #expect(authorizationFields(of: request) == ["Authorization"])
    }

    @Test func replacesTheHeaderUnderAnySpellingAndKeepsTheOthers() {
        var request = URLRequest(url: url)
        request.allHTTPHeaderFields = ["authorization": "Basic old", "Accept": "application/json"]
        request.setAuthorization("Bearer new")
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer new")
        #expect(authorizationFields(of: request).count == 1)
        #expect(request.value(forHTTPHeaderField: "Accept") == "application/json")
    }

    @Test(
        "Gives the same header as setValue",
        arguments: [
            "Bearer plain-token",
            "Bearer with\ttab",
            "Bearer line\r\nbreak",
            "Bearer folded\r\n continued",
            "Bearer nul\0byte",
            "Bearer ünïcode",
            "",
        ]
    )
    func matchesSetValue(value: String) {
        var expected = URLRequest(url: url)
        expected.setValue("Basic old", forHTTPHeaderField: "Authorization")
        var actual = expected
        expected.setValue(value, forHTTPHeaderField: "Authorization")
        actual.setAuthorization(value)
        let written = actual.value(forHTTPHeaderField: "Authorization")
        #expect(written == expected.value(forHTTPHeaderField: "Authorization"))
        #expect(authorizationFields(of: actual).count == authorizationFields(of: expected).count)
    }

    @Test func printableASCIIIsCheckedAtEveryPositionOfEveryWord() {
        // The check reads eight bytes at a time: every character of U+0000...U+00FF at every
        // position of strings of 1 to 24 bytes gets the answer of the byte-by-byte definition.
        for length in 1...24 {
            for position in 0..<length {
                for code in UInt32(0)...0xFF {
                    guard let scalar = Unicode.Scalar(code) else { continue }
                    var text = String(repeating: "a", count: length)
                    let index = text.index(text.startIndex, offsetBy: position)
                    text.replaceSubrange(index...index, with: String(Character(scalar)))
                    let expected = code == 0x09 || (0x20...0x7E).contains(code)
                    #expect(
                        text.isPrintableASCII == expected, "U+\(String(code, radix: 16)) at \(position) of \(length)")
                }
            }
        }
        #expect(String(repeating: "eyJhbGciOiJFUzI1NiJ9.", count: 40).isPrintableASCII)
        #expect(!(String(repeating: "x", count: 600) + "\u{7F}").isPrintableASCII)
        #expect("".isPrintableASCII)
    }

    @Test func comparesASCIILettersWithoutCase() {
        #expect("Bearer".isEqualIgnoringASCIICase(to: "bEARER"))
        #expect("https".isEqualIgnoringASCIICase(to: "HTTPS"))
        #expect(!"Bearer".isEqualIgnoringASCIICase(to: "Bearex"))
        #expect(!"Bearer".isEqualIgnoringASCIICase(to: "Bearers"))
        // "@" and "`", "[" and "{" differ in bit 0x20 too, but are not letters.
        #expect(!"a@".isEqualIgnoringASCIICase(to: "a`"))
        #expect(!"[".isEqualIgnoringASCIICase(to: "{"))
        #expect(!"ü".isEqualIgnoringASCIICase(to: "Ü"))
    }
}
