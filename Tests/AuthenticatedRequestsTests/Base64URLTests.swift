import AuthenticatedRequests
import Foundation
import Testing

/// base64url (RFC 4648 §5, no padding), written three bytes at a time: equal to Foundation's
/// base64 with its two characters swapped and the padding dropped, for every length.
@Test func base64URLEncodingMatchesFoundationForEveryLength() {
    var generator = SystemRandomNumberGenerator()
    for length in 0..<200 {
        let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let expected = bytes.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(Base64URL.encode(bytes) == expected, "\(length) bytes")
        #expect(Base64URL.decode(Substring(expected)) == bytes)
    }
}
