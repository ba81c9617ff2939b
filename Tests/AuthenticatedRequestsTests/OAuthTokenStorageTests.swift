import AuthenticatedRequests
import Foundation
import Testing

/// A token reads back from a store exactly as written (found by the token-reply fuzz target: an
/// `expires_in` of 36013.333… came back one rounding step off through seconds-since-1970).
@Suite struct OAuthTokenStorageTests {
    @Test(arguments: [36013.333_333_333_333, 0.1, 1e-7, 3599.999_999_9, 86_400 * 365.25 * 9])
    func aTokenSurvivesItsStoreExactly(expiresIn: TimeInterval) throws {
        var token = OAuthToken(
            accessToken: "at", expiresAt: Date(timeIntervalSince1970: 1_800_000_000).addingTimeInterval(expiresIn),
            refreshToken: "rt", issuedAt: Date())
        #expect(try JSONDecoder().decode(OAuthToken.self, from: JSONEncoder().encode(token)) == token)
        token.expiresAt = Date()  // set later, as a refresh does
        token.issuedAt = Date().addingTimeInterval(-expiresIn)
        #expect(try JSONDecoder().decode(OAuthToken.self, from: JSONEncoder().encode(token)) == token)
        let expiresAt = try #require(token.expiresAt)
        #expect(abs(expiresAt.timeIntervalSinceNow) < 0.01, "kept to 1/1024 s, not more")
    }
}
