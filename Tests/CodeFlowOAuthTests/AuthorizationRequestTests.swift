import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

let authorizeURL = URL(string: "https://auth.example.com/authorize?tenant=acme&prompt=login")!
let tokenURL = URL(string: "https://auth.example.com/token")!
let redirectURI = URL(string: "http://127.0.0.1:53682/callback")!

struct FixedPKCE: CodeFlowConfiguration {
    func makePKCE() throws -> PKCE? { try PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") }
}

func configuration(
    _ codeFlow: any CodeFlowConfiguration = PKCECodeFlowConfiguration(),
    issuer: String? = nil,
    requiresIssuer: Bool = false
) -> AuthenticationConfiguration {
    AuthenticationConfiguration(
        authorizationEndpoint: authorizeURL,
        tokenEndpoint: tokenURL,
        client: .none(id: "native app"),
        redirectURI: redirectURI,
        scope: "openid profile",
        additionalParameters: ["login_hint": "ada+test@example.com"],
        codeFlowConfiguration: codeFlow,
        issuer: issuer,
        requiresIssuerParameter: requiresIssuer
    )
}

func query(_ url: URL) -> [String: String] {
    Dictionary(
        (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") },
        uniquingKeysWith: { first, _ in first }
    )
}

@Suite struct AuthorizationRequestTests {
    @Test func keepsExistingQueryItemsAndAddsEveryParameterEncoded() throws {
        let request = try AuthorizationRequest(configuration: configuration(FixedPKCE()), redirectURI: redirectURI)
        let items = query(request.url)
        #expect(items["tenant"] == "acme")
        #expect(items["prompt"] == "login")
        #expect(items["response_type"] == "code")
        #expect(items["client_id"] == "native app")
        #expect(items["redirect_uri"] == redirectURI.absoluteString)
        #expect(items["scope"] == "openid profile")
        #expect(items["state"] == request.state)
        #expect(
            items["code_challenge"] == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "the RFC 7636 Appendix B vector")
        #expect(items["code_challenge_method"] == "S256")
        #expect(items["login_hint"] == "ada+test@example.com")
        let raw = try #require(request.url.query)
        #expect(raw.hasPrefix("tenant=acme&prompt=login&response_type=code"))
        #expect(raw.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A53682%2Fcallback"))
        #expect(raw.contains("scope=openid%20profile"))
        #expect(raw.contains("login_hint=ada%2Btest%40example.com"), "a + in a value is encoded, not read as a space")
    }

    @Test func stateHasAtLeast128BitsAndIsFreshEachTime() throws {
        let a = try AuthorizationRequest(configuration: configuration(), redirectURI: redirectURI)
        let b = try AuthorizationRequest(configuration: configuration(), redirectURI: redirectURI)
        #expect(a.state.count >= 22, "22 base64url characters carry 132 bits")
        #expect(
            Data(
                base64Encoded: a.state.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                    + "=")?.count == 32)
        #expect(a.state != b.state)
        #expect(a.pkce?.verifier != b.pkce?.verifier)
        #expect(a.pkce?.method == .s256)
        #expect(!a.description.contains(a.state))
    }

    @Test func theBasicConfigurationSendsNoChallenge() throws {
        let request = try AuthorizationRequest(
            configuration: configuration(BasicCodeFlowConfiguration()), redirectURI: redirectURI)
        #expect(query(request.url)["code_challenge"] == nil)
        #expect(query(request.url)["code_challenge_method"] == nil)
        #expect(request.pkce == nil)
    }
}

@Suite struct AuthorizationResponseTests {
    let request: AuthorizationRequest

    init() throws {
        request = try AuthorizationRequest(configuration: configuration(), redirectURI: redirectURI)
    }

    func redirect(_ query: String) -> URL {
        URL(string: "\(redirectURI.absoluteString)?\(query)")!
    }

    func parse(_ query: String, issuer: String? = nil, requiresIssuer: Bool = false) throws -> AuthorizationResponse {
        try AuthorizationResponse(
            redirect: redirect(query), request: request, issuer: issuer, requiresIssuer: requiresIssuer)
    }

    @Test func acceptsTheCodeWithItsStateAndKeepsExtraParameters() throws {
        let response = try parse("code=abc&state=\(request.state)&session_state=xyz")
        #expect(response.code == "abc")
        #expect(response.additionalParameters == ["session_state": "xyz"])
        #expect(!response.description.contains("abc"))
    }

    @Test func aWrongStateIsRejected() {
        let error = #expect(throws: CodeFlowError.self) { try parse("code=abc&state=forged") }
        #expect(error?.code == .stateMismatch)
        let prefix = #expect(throws: CodeFlowError.self) { try parse("code=abc&state=\(request.state.dropLast())") }
        #expect(prefix?.code == .stateMismatch)
    }

    @Test func aMissingStateIsRejected() {
        let error = #expect(throws: CodeFlowError.self) { try parse("code=abc") }
        #expect(error?.code == .missingState)
    }

    @Test func aMissingCodeIsRejected() {
        let error = #expect(throws: CodeFlowError.self) { try parse("state=\(request.state)") }
        #expect(error?.code == .missingCode)
    }

    @Test func theFragmentIsIgnored() {
        let url = URL(string: "\(redirectURI.absoluteString)?state=\(request.state)#code=abc")!
        let error = #expect(throws: CodeFlowError.self) {
            try AuthorizationResponse(redirect: url, request: request, issuer: nil, requiresIssuer: false)
        }
        #expect(error?.code == .missingCode)
    }

    @Test func anErrorRedirectCarriesCodeDescriptionAndURI() {
        let denied = #expect(throws: OAuthError.self) {
            try parse(
                "error=access_denied&error_description=The+user+said+no&error_uri=https%3A%2F%2Fdocs.example.com&state=\(request.state)"
            )
        }
        #expect(denied?.code == .accessDenied)
        #expect(denied?.errorDescription == "The user said no", "form decoding: + is a space")
        #expect(denied?.errorURI == URL(string: "https://docs.example.com"))
        let other = #expect(throws: OAuthError.self) { try parse("error=server_error&state=\(request.state)") }
        #expect(other?.code == .serverError)
        #expect(other?.code != .accessDenied)
    }

    @Test func anErrorRedirectWithAWrongStateIsAStateMismatch() {
        let error = #expect(throws: CodeFlowError.self) { try parse("error=access_denied&state=forged") }
        #expect(error?.code == .stateMismatch)
    }

    @Test func theIssuerIsChecked() throws {
        let issuer = "https://auth.example.com"
        #expect(
            try parse("code=abc&state=\(request.state)&iss=\(issuer)", issuer: issuer, requiresIssuer: true).code
                == "abc")
        let mismatch = #expect(throws: CodeFlowError.self) {
            try parse("code=abc&state=\(request.state)&iss=https://evil.example.com", issuer: issuer)
        }
        #expect(mismatch?.code == .issuerMismatch)
        let missing = #expect(throws: CodeFlowError.self) {
            try parse("code=abc&state=\(request.state)", issuer: issuer, requiresIssuer: true)
        }
        #expect(missing?.code == .issuerMismatch)
    }
}

@Suite struct IssuerAndServerErrorTests {
    @Test func aRedirectWithoutThePromisedIssShowsNothingItSaidAndKeepsItOnlyAsRawData() throws {
        let request = try AuthorizationRequest(
            configuration: configuration(issuer: "https://issuer.example.com", requiresIssuer: true),
            redirectURI: redirectURI)
        let redirect = URL(
            string:
                "\(redirectURI.absoluteString)?error=access_denied&error_description=No+thanks&state=\(request.state)")!
        let error = #expect(throws: CodeFlowError.self) {
            try AuthorizationResponse(
                redirect: redirect, request: request, issuer: "https://issuer.example.com", requiresIssuer: true)
        }
        #expect(error?.code == .issuerMismatch)
        #expect(error?.unverifiedServerError?.code == .accessDenied)
        #expect(error?.unverifiedServerError?.errorDescription == "No thanks")
        #expect(error?.description.contains("access_denied") == false)
        #expect(error?.description.contains("No thanks") == false)
    }

    @Test func aRedirectFromAnotherIssuerShowsNeitherItsErrorNorItsIssuer() throws {
        let request = try AuthorizationRequest(
            configuration: configuration(issuer: "https://issuer.example.com", requiresIssuer: true),
            redirectURI: redirectURI)
        let redirect = URL(
            string: "\(redirectURI.absoluteString)?error=access_denied&error_description=Call+555-EVIL"
                + "&error_uri=https%3A%2F%2Fevil.example%2Fhelp&iss=https%3A%2F%2Fevil.example&state=\(request.state)")!
        let error = #expect(throws: CodeFlowError.self) {
            try AuthorizationResponse(
                redirect: redirect, request: request, issuer: "https://issuer.example.com", requiresIssuer: true)
        }
        #expect(error?.code == .issuerMismatch)
        #expect(error?.unverifiedIssuer == "https://evil.example")
        #expect(error?.unverifiedServerError?.errorURI?.host == "evil.example")
        for text in [error?.description, error?.message, error.map { "\($0)" }] {
            #expect(text?.contains("evil") == false)
            #expect(text?.contains("555") == false)
            #expect(text?.contains("access_denied") == false)
        }
    }

    @Test func anErrorRedirectThatEchoesTheStateIsRedacted() throws {
        let request = try AuthorizationRequest(configuration: configuration(), redirectURI: redirectURI)
        let redirect = URL(
            string:
                "\(redirectURI.absoluteString)?error=invalid_request&error_description=bad+state+\(request.state)&state=\(request.state)"
        )!
        let error = #expect(throws: OAuthError.self) {
            try AuthorizationResponse(redirect: redirect, request: request, issuer: nil, requiresIssuer: false)
        }
        #expect(error?.errorDescription?.contains(request.state) == false)
    }
}
