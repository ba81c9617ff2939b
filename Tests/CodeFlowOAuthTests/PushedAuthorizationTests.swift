import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private let parURL = URL(string: "https://auth.example.com/par")!
private let appRedirect = URL(string: "com.example.app:/callback")!

/// An authorization server in memory with a PAR endpoint, and a user agent that "approves" by
/// redirecting with a code and the state the client pushed.
private final class PARServer: Sendable {
    struct State: Sendable {
        var pushes: [URLRequest] = []
        var tokenRequests: [URLRequest] = []
        var opened: [URL] = []
        var parReply: (Int, String) = (201, #"{"request_uri":"urn:ietf:params:oauth:request_uri:abc","expires_in":60}"#)
    }
    let state = Locked(State())

    static func form(_ request: URLRequest) -> [(String, String)] {
        String(decoding: request.httpBody ?? Data(), as: UTF8.self).split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }

    var transport: InMemoryTransport {
        InMemoryTransport { [self] request in
            if request.url?.path == "/par" {
                let (status, body) = state.withLock { state in
                    state.pushes.append(request)
                    return state.parReply
                }
                return try InMemoryTransport.reply(to: request, status: status, json: body)
            }
            state.withLock { $0.tokenRequests.append(request) }
            return try InMemoryTransport.reply(
                to: request, json: #"{"access_token":"at","token_type":"Bearer","expires_in":3600}"#)
        }
    }

    var userAgent: CustomSchemeUserAgent {
        CustomSchemeUserAgent { [self] url in
            state.withLock { $0.opened.append(url) }
        }
    }
}

@Suite struct PushedAuthorizationTests {
    private let server = PARServer()

    private func configuration(
        client: ClientAuthentication = .clientSecretBasic(id: "app", secret: "s3cret"), repeated: [String] = []
    ) -> AuthenticationConfiguration {
        AuthenticationConfiguration(
            authorizationEndpoint: URL(string: "https://auth.example.com/authorize?tenant=acme")!,
            tokenEndpoint: tokenURL, client: client, redirectURI: appRedirect, scope: "openid profile",
            resources: [URL(string: "https://api.example.com/")!, URL(string: "https://files.example.com/")!],
            pushedAuthorizationRequestEndpoint: parURL, parametersRepeatedInBrowser: repeated)
    }

    /// Runs the flow until the browser opens, then redirects back with the pushed state.
    private func signIn(_ configuration: AuthenticationConfiguration) async throws -> CodeFlowResult {
        let agent = server.userAgent
        let manager = CodeFlowManager(
            configuration: configuration, userAgent: agent,
            context: AuthenticationContext(transport: server.transport, clock: TestClock()))
        async let result = manager.authorize()
        var state: String?
        // Waits for the browser to open (a condition, not a time): at most 5 s.
        for _ in 0..<5_000 where state == nil {
            state = server.state.withLock {
                $0.opened.isEmpty ? nil : PARServer.form($0.pushes[0]).first { $0.0 == "state" }?.1
            }
            if state == nil { try await Task.sleep(for: .milliseconds(1)) }
        }
        if state == nil { _ = try await result }  // surfaces why the browser never opened
        #expect(server.state.withLock { $0.opened.first.map { RedirectStateProbe.hasState($0) } } == false)
        let pushedState = try #require(state)
        #expect(agent.handleRedirect(URL(string: "com.example.app:/callback?code=the-code&state=\(pushedState)")!))
        return try await result
    }

    @Test func theRequestIsPushedAuthenticatedAndTheBrowserGetsOnlyClientIDAndRequestURI() async throws {
        let result = try await signIn(configuration())
        #expect(result.token.accessToken == "at")
        let (pushes, opened, tokenRequests) = server.state.withLock { ($0.pushes, $0.opened, $0.tokenRequests) }
        let push = try #require(pushes.first)
        #expect(push.value(forHTTPHeaderField: "Authorization")?.hasPrefix("Basic ") == true)
        let form = PARServer.form(push)
        let names = form.map(\.0)
        #expect(names.filter { $0 == "client_id" }.count <= 1)
        #expect(!names.contains("client_secret"))
        for name in ["response_type", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method"] {
            #expect(names.contains(name), "\(name) is pushed")
        }
        #expect(
            form.filter { $0.0 == "resource" }.map(\.1) == ["https://api.example.com/", "https://files.example.com/"])
        let browser = try #require(opened.first)
        #expect(
            browser.query == "tenant=acme&client_id=app&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3Aabc")
        let exchange = PARServer.form(try #require(tokenRequests.first))
        #expect(exchange.contains { $0 == ("code", "the-code") })
        #expect(exchange.contains { $0.0 == "code_verifier" })
        #expect(exchange.filter { $0.0 == "resource" }.count == 2, "the code exchange names the resources too")
    }

    @Test func parametersTheServerWantsRepeatedAreRepeatedInTheBrowser() async throws {
        _ = try await signIn(
            configuration(client: .none(id: "app"), repeated: ["response_type", "scope", "redirect_uri"]))
        let browser = try #require(server.state.withLock { $0.opened.first })
        let items = URLComponents(url: browser, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(items.map(\.name) == ["tenant", "client_id", "request_uri", "response_type", "redirect_uri", "scope"])
        #expect(!items.contains { $0.name == "state" || $0.name == "code_challenge" })
        let form = PARServer.form(try #require(server.state.withLock { $0.pushes.first }))
        #expect(form.filter { $0.0 == "client_id" }.count == 1, "a public client sends client_id once")
    }

    @Test func aRefusedPushOpensNoBrowser() async throws {
        server.state.withLock { $0.parReply = (400, #"{"error":"invalid_request","error_description":"bad scope"}"#) }
        let manager = CodeFlowManager(
            configuration: configuration(), userAgent: server.userAgent,
            context: AuthenticationContext(transport: server.transport, clock: TestClock()))
        do {
            _ = try await manager.authorize()
            Issue.record("the flow went on")
        } catch let error as OAuthError {
            #expect(error.code == .invalidRequest && error.errorDescription == "bad scope")
        }
        #expect(server.state.withLock { $0.opened.isEmpty })
    }

    @Test(arguments: [
        #"{"expires_in":60}"#, #"{"request_uri":"","expires_in":60}"#, #"{"request_uri":"urn:x"}"#,
        #"{"request_uri":"urn:x","expires_in":-1}"#, #"{"request_uri":"urn:x","expires_in":0}"#,
        #"{"request_uri":"urn:x","expires_in":"soon"}"#, #"{"request_uri":"urn x","expires_in":60}"#,
        #"{"request_uri":42,"expires_in":60}"#, "<html>", "",
    ])
    func aPushedResponseWithoutAUsableRequestURIOrLifetimeIsRefused(body: String) async throws {
        server.state.withLock { $0.parReply = (201, body) }
        let endpoint = PushedAuthorizationEndpoint(url: parURL, client: .none(id: "app"))
        await #expect(throws: TokenEndpointError.self) {
            _ = try await endpoint.push(
                [("response_type", "code")], context: AuthenticationContext(transport: server.transport))
        }
    }

    @Test func aServerThatRequiresPushedRequestsGetsThemWithoutBeingAsked() throws {
        func metadata(_ extra: String) throws -> AuthorizationServerMetadata {
            let json =
                #"{"issuer":"https://auth.example.com","authorization_endpoint":"https://auth.example.com/authorize","token_endpoint":"https://auth.example.com/token""#
                + extra + "}"
            return try AuthorizationServerMetadata(
                fields: try #require(try JSONValue(parsing: Data(json.utf8)).objectValue))
        }
        let required = try metadata(
            #","pushed_authorization_request_endpoint":"https://auth.example.com/par","require_pushed_authorization_requests":true,"dpop_signing_alg_values_supported":["ES256"]"#
        )
        #expect(required.dpopSigningAlgValuesSupported == ["ES256"])
        let pushed = try AuthenticationConfiguration(
            metadata: required, client: .none(id: "app"), redirectURI: appRedirect)
        #expect(pushed.pushedAuthorizationRequestEndpoint == parURL)
        let optional = try metadata(#","pushed_authorization_request_endpoint":"https://auth.example.com/par""#)
        #expect(
            try AuthenticationConfiguration(metadata: optional, client: .none(id: "app"), redirectURI: appRedirect)
                .pushedAuthorizationRequestEndpoint == nil)
        #expect(
            try AuthenticationConfiguration(
                metadata: optional, client: .none(id: "app"), redirectURI: appRedirect,
                pushesAuthorizationRequests: true
            ).pushedAuthorizationRequestEndpoint == parURL)
        let broken = try metadata(#","require_pushed_authorization_requests":true"#)
        #expect(throws: CodeFlowError.self) {
            _ = try AuthenticationConfiguration(metadata: broken, client: .none(id: "app"), redirectURI: appRedirect)
        }
    }

    @Test func resourceIndicatorsAreInTheAuthorizationURLWhenNothingIsPushed() throws {
        var configuration = configuration()
        configuration.pushedAuthorizationRequestEndpoint = nil
        let request = try AuthorizationRequest(configuration: configuration, redirectURI: appRedirect)
        let resources = (URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []).filter {
            $0.name == "resource"
        }
        #expect(resources.map(\.value) == ["https://api.example.com/", "https://files.example.com/"])
        configuration.resources = [URL(string: "https://api.example.com/#frag")!]
        #expect(throws: CodeFlowError.self) {
            _ = try AuthorizationRequest(configuration: configuration, redirectURI: appRedirect)
        }
    }
}

private enum RedirectStateProbe {
    static func hasState(_ url: URL) -> Bool {
        (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).contains { $0.name == "state" }
    }
}
