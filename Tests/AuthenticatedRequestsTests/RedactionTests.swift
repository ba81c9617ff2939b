import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// No secret appears in `String(describing:)`, `String(reflecting:)`, `dump` or error messages.
@Suite struct RedactionTests {
    static let secrets = ["AT-secret-access", "RT-secret-refresh", "ID-secret-jwt"]

    func assertNoSecret(_ value: Any, sourceLocation: SourceLocation = #_sourceLocation) {
        var dumped = ""
        dump(value, to: &dumped)
        for text in [String(describing: value), String(reflecting: value), dumped] {
            for secret in Self.secrets {
                #expect(!text.contains(secret), "\(secret) leaked in: \(text)", sourceLocation: sourceLocation)
            }
        }
    }

    var token: OAuthToken {
        OAuthToken(
            accessToken: "AT-secret-access",
            tokenType: "bearer",
            expiresAt: Date(timeIntervalSince1970: 0),
            refreshToken: "RT-secret-refresh",
            scope: "read",
            idToken: "ID-secret-jwt",
            additionalFields: ["foo": .string("bar")]
        )
    }

    @Test func tokensAreRedacted() {
        assertNoSecret(token)
        assertNoSecret([token])
        #expect(String(describing: token).contains("read"), "non-secret fields stay visible")
    }

    @Test func errorsAreRedacted() throws {
        let url = URL(string: "https://api.example.com/x?access_token=AT-secret-access")!
        let response = ResponseHead(statusCode: 400, url: url)
        let body = Data(#"{"refresh_token":"RT-secret-refresh","id_token":"ID-secret-jwt"}"#.utf8)
        let resourceError = ResourceError(
            code: .unacceptableStatus, method: "GET", url: url, response: response, body: body)
        assertNoSecret(resourceError)
        #expect(resourceError.url == url, "the URL is kept for code; only descriptions drop the query")

        let oauthError = OAuthError(code: .invalidGrant, errorDescription: "refresh_token=RT-secret-refresh is revoked")
        assertNoSecret(oauthError)
        assertNoSecret(AuthenticationError(code: .refreshFailed, message: "x", underlyingError: oauthError))
        assertNoSecret(TokenStoreError(code: .corrupt, key: "k", underlyingError: resourceError))
    }

    @Test func formAndHeaderSecretsAreRedactedInText() {
        let text =
            "grant_type=refresh_token&refresh_token=RT-secret-refresh&client_id=app Authorization: Bearer AT-secret-access"
        let redacted = String(
            describing: AuthenticationError(
                code: .refreshFailed, message: "m",
                underlyingError: URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: text])))
        for secret in Self.secrets { #expect(!redacted.contains(secret)) }
    }
}

@Suite struct RedactionVocabularyTests {
    @Test func anNSErrorCodeIsNotASecretButAnOAuthCodeIs() {
        let text =
            #"Error Domain=NSURLErrorDomain Code=-1004 "(null)" State=running, redirect ?code=abc123&state=xyz987"#
        let redacted = Redaction.redact(text)
        #expect(redacted.contains("Code=-1004"), "\(redacted)")
        #expect(redacted.contains("State=running"))
        #expect(!redacted.contains("abc123") && !redacted.contains("xyz987"))
    }
}
