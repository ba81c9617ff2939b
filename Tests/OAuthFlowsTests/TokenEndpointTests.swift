import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let tokenURL = URL(string: "https://auth.example.com/token")!
let awkwardSecret = "a&b=c+d/é"

@Suite struct TokenEndpointTests {
    let clock = TestClock()
    let server = TokenServer()

    var context: AuthenticationContext { server.context(clock: clock) }

    func request(client: ClientAuthentication) async throws -> OAuthToken {
        server.reply(json: #"{"access_token":"at","token_type":"Bearer","expires_in":3600}"#)
        return try await TokenEndpoint(url: tokenURL, client: client)
            .requestToken(grantType: "client_credentials", context: context)
    }

    @Test func requestsArePostedAsFormWithJSONAccepted() async throws {
        _ = try await request(client: .none(id: "app"))
        let sent = try #require(server.requests.first)
        #expect(sent.request.httpMethod == "POST")
        #expect(sent.request.url == tokenURL)
        #expect(sent.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(sent.header("Accept") == "application/json")
        #expect(sent.body == "grant_type=client_credentials&client_id=app")
        #expect(sent.header("Authorization") == nil)
    }

    @Test func clientSecretBasicFormEncodesIdAndSecretBeforeBase64() async throws {
        _ = try await request(client: .clientSecretBasic(id: "my app", secret: awkwardSecret))
        let sent = try #require(server.requests.first)
        let header = try #require(sent.header("Authorization"))
        #expect(header.hasPrefix("Basic "))
        let decoded = String(decoding: Data(base64Encoded: String(header.dropFirst(6))) ?? Data(), as: UTF8.self)
        #expect(decoded == "my%20app:a%26b%3Dc%2Bd%2F%C3%A9")
        let parts = decoded.split(separator: ":").map { String($0).removingPercentEncoding }
        #expect(parts == ["my app", awkwardSecret])
        #expect(sent.body == "grant_type=client_credentials", "one method only: nothing in the body")
    }

    @Test func clientSecretPostSendsTheSecretIntactInTheBodyOnly() async throws {
        _ = try await request(client: .clientSecretPost(id: "app", secret: awkwardSecret))
        let sent = try #require(server.requests.first)
        #expect(sent.body == "grant_type=client_credentials&client_id=app&client_secret=a%26b%3Dc%2Bd%2F%C3%A9")
        #expect(sent.form["client_secret"] == awkwardSecret)
        #expect(sent.header("Authorization") == nil, "one method only: no Basic header")
    }

    @Test func expiryIsComputedFromWhenTheRequestWasSent() async throws {
        let slow = TokenServer(clock: clock, advanceOnRequest: 30)
        slow.reply(json: #"{"access_token":"at","token_type":"bearer","expires_in":100}"#)
        let sentAt = clock.now
        let token = try await TokenEndpoint(url: tokenURL, client: .none(id: "app"))
            .requestToken(grantType: "client_credentials", context: slow.context(clock: clock))
        #expect(token.expiresAt == sentAt.addingTimeInterval(100))
        #expect(clock.now == sentAt.addingTimeInterval(30))
    }

    @Test func anInsecureEndpointIsRefusedBeforeAnySecretIsSent() async throws {
        let endpoint = TokenEndpoint(
            url: URL(string: "http://auth.example.com/token")!, client: .clientSecretPost(id: "a", secret: "s"))
        let error = await #expect(throws: TokenEndpointError.self) {
            try await endpoint.requestToken(grantType: "client_credentials", context: context)
        }
        #expect(error?.code == .insecureEndpoint)
        #expect(server.requests.isEmpty)
    }
}

/// Awkward but legal responses, and illegal ones.
@Suite struct TokenResponseParsingTests {
    let clock = TestClock()
    let server = TokenServer()

    func parse(status: Int = 200, contentType: String = "application/json", body: Data) async throws -> OAuthToken {
        server.reply(status: status, headers: ["Content-Type": contentType], body: body)
        return try await TokenEndpoint(url: tokenURL, client: .none(id: "app"))
            .requestToken(
                grantType: "client_credentials", requestedScope: "read", context: server.context(clock: clock))
    }

    func parse(status: Int = 200, _ json: String) async throws -> OAuthToken {
        try await parse(status: status, body: Data(json.utf8))
    }

    @Test func expiresInAsAString() async throws {
        let token = try await parse(#"{"access_token":"at","token_type":"Bearer","expires_in":"3600"}"#)
        #expect(token.expiresAt == clock.now.addingTimeInterval(3600))
    }

    @Test func missingExpiresInMeansUnknownExpiry() async throws {
        let token = try await parse(#"{"access_token":"at","token_type":"Bearer"}"#)
        #expect(token.expiresAt == nil)
        #expect(!token.requiresRefresh(at: .distantFuture))
    }

    @Test func tokenTypeInAnyCasingIsBearer() async throws {
        let token = try await parse(#"{"access_token":"at","token_type":"BEARER","expires_in":60}"#)
        #expect(token.isBearer)
        var request = URLRequest(url: URL(string: "https://api.example.com")!)
        BearerTokenAuthenticator(
            flow: RefreshTokenFlow(tokenEndpoint: tokenURL, client: .none(id: "a"), refreshToken: "r")
        )
        .apply(token, to: &request)
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer at")
    }

    @Test func extraFieldsAreKeptAndScopeDefaultsToTheRequestedOne() async throws {
        let token = try await parse(
            #"{"access_token":"at","token_type":"Bearer","refresh_token":"rt","id_token":"idt","issued_token_type":"urn:x","custom":{"a":[1,true,null]}}"#
        )
        #expect(token.refreshToken == "rt")
        #expect(token.idToken == "idt")
        #expect(token.scope == "read")
        #expect(token.additionalFields["issued_token_type"] == .string("urn:x"))
        #expect(token.additionalFields["custom"] == .object(["a": .array([.number(1), .bool(true), .null])]))
        #expect(token.additionalFields["access_token"] == nil)
    }

    @Test func aGrantedScopeReplacesTheRequestedOne() async throws {
        let token = try await parse(#"{"access_token":"at","token_type":"Bearer","scope":"read write"}"#)
        #expect(token.scopes == ["read", "write"])
    }

    @Test func anErrorBodyWithStatus200IsAnOAuthError() async throws {
        let error = await #expect(throws: OAuthError.self) {
            try await parse(
                #"{"error":"invalid_grant","error_description":"Code expired","error_uri":"https://docs.example.com/e"}"#
            )
        }
        #expect(error?.code == .invalidGrant)
        #expect(error?.errorDescription == "Code expired")
        #expect(error?.errorURI == URL(string: "https://docs.example.com/e"))
        #expect(error?.statusCode == 200)
    }

    @Test func anRFC6749ErrorKeepsEveryField() async throws {
        server.reply(
            status: 401,
            headers: ["Content-Type": "application/json", "WWW-Authenticate": #"Basic realm="token""#],
            json: #"{"error":"invalid_client","error_description":"Client authentication failed"}"#
        )
        let error = await #expect(throws: OAuthError.self) {
            try await TokenEndpoint(url: tokenURL, client: .clientSecretBasic(id: "a", secret: "wrong"))
                .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
        }
        #expect(error?.code == .invalidClient)
        #expect(error?.statusCode == 401)
        #expect(error?.wwwAuthenticate == #"Basic realm="token""#)
        #expect(error?.errorDescription == "Client authentication failed")
        let text = try #require(error).description
        #expect(text.contains("Client authentication failed"), "the server's words first")
        #expect(text.contains("Check the client id and its secret or key"), "then what to check: \(text)")
    }

    @Test func errorsOfOtherCodesSayWhatToCheckOnlyWhereTheClientCanAct() {
        #expect(OAuthError(code: .invalidGrant).description.contains("sign in again"))
        #expect(OAuthError(code: .invalidScope).description.contains("Check the scope"))
        #expect(OAuthError(code: .unauthorizedClient).description.contains("Check the client's registration"))
        #expect(
            OAuthError(code: .serverError, errorDescription: "busy").description == "OAuthError(server_error): busy")
    }

    @Test func aRefreshErrorThatQuotesTheTokenBeingRefreshedDoesNotShowIt() async throws {
        server.reply(
            status: 400,
            json: #"{"error":"invalid_grant","error_description":"AT-old-access-9 and ID-old-idtoken-9 are revoked"}"#)
        let previous = OAuthToken(
            accessToken: "AT-old-access-9", refreshToken: "RT-old-refresh-9", idToken: "ID-old-idtoken-9")
        let error = await #expect(throws: OAuthError.self) {
            try await TokenEndpoint(url: tokenURL, client: .none(id: "app")).refresh(
                previous, context: server.context(clock: clock))
        }
        let text = try #require(error).description
        for secret in ["AT-old-access-9", "ID-old-idtoken-9"] { #expect(!text.contains(secret), "\(text)") }
        #expect(text.contains("are revoked"))
    }

    @Test func anUnknownErrorCodeIsKept() async throws {
        let error = await #expect(throws: OAuthError.self) {
            try await parse(status: 400, #"{"error":"consent_required"}"#)
        }
        #expect(error?.code.rawValue == "consent_required")
    }

    @Test func anHTMLErrorPageNamesStatusAndContentType() async throws {
        let html = Data("<html><body>502 Bad Gateway</body></html>".utf8)
        let error = await #expect(throws: TokenEndpointError.self) {
            try await parse(status: 502, contentType: "text/html", body: html)
        }
        #expect(error?.code == .unexpectedStatus)
        #expect(error?.statusCode == 502)
        #expect(error?.contentType == "text/html")
        #expect(error?.description.contains("502") == true)
        #expect(error?.description.contains("text/html") == true)
        #expect(error?.bodySnippet?.contains("Bad Gateway") == true)
    }

    @Test func anEmptyBodyIsAClearError() async throws {
        let error = await #expect(throws: TokenEndpointError.self) { try await parse(body: Data()) }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("empty") == true)
    }

    @Test func a2MiBBodyIsRefused() async throws {
        let big =
            Data(#"{"access_token":""#.utf8) + Data(repeating: UInt8(ascii: "a"), count: 2 << 20) + Data(#""}"#.utf8)
        // The transport enforces the cap for every request to the authorization server.
        let error = await #expect(throws: HTTPTransportError.self) { try await parse(body: big) }
        #expect(error?.code == .responseTooLarge)
        #expect((error?.description.count ?? .max) < 600, "the message stays short")
    }

    @Test func invalidUTF8IsAClearError() async throws {
        let error = await #expect(throws: TokenEndpointError.self) {
            try await parse(body: Data([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D]))
        }
        #expect(error?.code == .invalidResponse)
        #expect(!(error?.underlyingError is Never))
    }

    @Test func jsonWithoutAnAccessTokenIsAMissingField() async throws {
        let error = await #expect(throws: TokenEndpointError.self) {
            try await parse(#"{"token_type":"Bearer","refresh_token":"secret-rt"}"#)
        }
        #expect(error?.code == .missingField)
        #expect(error?.description.contains("secret-rt") == false)
    }
}
