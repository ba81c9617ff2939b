import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// JARM's response modes (§2.3): `query.jwt` and `jwt` in the query, `fragment.jwt` for agents that
/// hand back the whole redirect URL, `form_post.jwt` as a form posted to the loopback receiver,
/// which accepts a `POST` only for a flow that asked for it. Real sockets for the receiver.
@Suite(.timeLimit(.minutes(1))) struct SignedResponseModeTests {
    let clock = TestClock()
    let tokens = TokenServer()

    /// A response `header.claims.signature` whose claims are JSON; "verifying" it returns its
    /// claims as the parameters, and anything else is refused (the real validator is in
    /// OpenIDConnect and tested against real keys end to end).
    struct ClaimsVerifier: SignedAuthorizationResponseVerifier {
        struct Refused: Error {}
        let seen = Locked<[String]>([])

        func parameters(ofSignedResponse response: String, clientID: String) async throws -> [String: String] {
            seen.withLock { $0.append(response) }
            let parts = response.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[2] == "signature", let payload = Base64URL.decode(parts[1]),
                let claims = try? JSONValue(parsing: payload).objectValue
            else { throw Refused() }
            return claims.compactMapValues(\.stringValue)
        }

        static func response(state: String, code: String = "code-1") -> String {
            let claims = #"{"state":"\#(state)","code":"\#(code)"}"#
            return "e30.\(Base64URL.encode(Data(claims.utf8))).signature"
        }
    }

    func configuration(
        mode: SignedResponseMode, verifier: ClaimsVerifier,
        redirectURI: URL = URL(string: "http://127.0.0.1/callback")!,
        supported: [String] = []
    ) -> AuthenticationConfiguration {
        var configuration = AuthenticationConfiguration(
            authorizationEndpoint: authorizeURL, tokenEndpoint: tokenURL, client: .none(id: "cli"),
            redirectURI: redirectURI)
        configuration.signedResponseVerifier = verifier
        configuration.signedResponseMode = mode
        configuration.responseModesSupported = supported
        return configuration
    }

    func post(_ form: String, to url: URL, contentType: String = "application/x-www-form-urlencoded") async throws
        -> Int
    {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(form.utf8)
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (_, response) = try await session.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    @Test func formPostJWTArrivesAsAPostToTheLoopbackReceiver() async throws {
        tokens.reply(json: #"{"access_token":"at","token_type":"Bearer","expires_in":300}"#)
        let verifier = ClaimsVerifier()
        let opened = Locked<URL?>(nil)
        let opener = ClosureOpener { url in
            opened.withLock { $0 = url }
            let parameters = query(url)
            let redirect = try #require(parameters["redirect_uri"].flatMap(URL.init(string:)))
            let response = ClaimsVerifier.response(state: try #require(parameters["state"]))
            #expect(try await self.post("response=\(response)", to: redirect) == 200)
        }
        let manager = CodeFlowManager(
            configuration: configuration(mode: .formPostJWT, verifier: verifier),
            userAgent: LoopbackUserAgent(opener: opener, timeout: 30, onBrowserUnavailable: { _, _ in }),
            context: tokens.context(clock: clock))
        let result = try await manager.authorize()
        #expect(result.token.accessToken == "at")
        #expect(query(try #require(opened.withLock { $0 }))["response_mode"] == "form_post.jwt")
        #expect(verifier.seen.withLock { $0.count } == 1)
        #expect(tokens.requests.first?.form["code"] == "code-1")
    }

    /// A `POST` to a flow that asked for `query.jwt` is refused (`405`) and the flow keeps
    /// waiting for its redirect.
    @Test func aPostIsRefusedUnlessTheFlowAskedForAFormPost() async throws {
        tokens.reply(json: #"{"access_token":"at","token_type":"Bearer","expires_in":300}"#)
        let statuses = Locked<[Int]>([])
        let opener = ClosureOpener { url in
            let parameters = query(url)
            let redirect = try #require(parameters["redirect_uri"].flatMap(URL.init(string:)))
            let response = ClaimsVerifier.response(state: try #require(parameters["state"]))
            let refused = try await self.post("response=\(response)", to: redirect)
            statuses.withLock { $0.append(refused) }
            try await BrowserSimulator().open(URL(string: redirect.absoluteString + "?response=\(response)")!)
        }
        let manager = CodeFlowManager(
            configuration: configuration(mode: .queryJWT, verifier: ClaimsVerifier()),
            userAgent: LoopbackUserAgent(opener: opener, timeout: 30, onBrowserUnavailable: { _, _ in }),
            context: tokens.context(clock: clock))
        #expect(try await manager.authorize().token.accessToken == "at")
        #expect(statuses.withLock { $0 } == [405])
    }

    /// The receiver takes only a form, of bounded size, once it accepts one.
    @Test(arguments: [
        ("text/plain", 1, "HTTP/1.1 415"),
        ("application/x-www-form-urlencoded", 70_000, "HTTP/1.1 413"),
    ])
    func aFormPostMustBeASmallForm(contentType: String, size: Int, answer: String) async throws {
        let receiver = try await LoopbackRedirectReceiver.start(path: "/callback")
        defer { Task { await receiver.close() } }
        receiver.expect(state: "the-state")
        receiver.acceptFormPost()
        let connection = try #require(RawConnection(port: receiver.redirectURI.port ?? 0))
        let body = String(repeating: "a", count: size)
        connection.send(
            "POST /callback HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: \(contentType)\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let (text, closed) = connection.readUntilClosed(within: 10)
        #expect(closed)
        #expect(text.hasPrefix(answer), "\(text)")
    }

    /// An agent that hands back the whole redirect URL reads `fragment.jwt` from the fragment
    /// only: a `response` in the query is not looked at.
    @Test func fragmentJWTIsReadFromTheFragmentOnly() async throws {
        tokens.reply(json: #"{"access_token":"at","token_type":"Bearer","expires_in":300}"#)
        let verifier = ClaimsVerifier()
        let agentBox = Locked<CustomSchemeUserAgent?>(nil)
        let agent = CustomSchemeUserAgent { url in
            let state = try #require(query(url)["state"])
            let response = ClaimsVerifier.response(state: state)
            let redirect = URL(string: "com.example.app:/oauth?response=forged#response=\(response)")!
            #expect(agentBox.withLock { $0 }?.handleRedirect(redirect) == true)
        }
        agentBox.withLock { $0 = agent }
        let manager = CodeFlowManager(
            configuration: configuration(
                mode: .fragmentJWT, verifier: verifier, redirectURI: URL(string: "com.example.app:/oauth")!),
            userAgent: agent, context: tokens.context(clock: clock))
        #expect(try await manager.authorize().token.accessToken == "at")
        #expect(verifier.seen.withLock { $0 }.allSatisfy { $0 != "forged" })
        #expect(tokens.requests.first?.form["code"] == "code-1")
    }

    /// What an agent cannot receive, or the server does not list, is refused before anything is
    /// sent: no browser opens.
    @Test func aModeNobodyCanDeliverIsRefusedBeforeAnythingIsSent() async throws {
        let opened = Locked(0)
        let opener = ClosureOpener { _ in opened.withLock { $0 += 1 } }
        let loopback = LoopbackUserAgent(opener: opener, timeout: 5, onBrowserUnavailable: { _, _ in })
        let custom = CustomSchemeUserAgent { _ in opened.withLock { $0 += 1 } }
        let refusals: [(AuthenticationConfiguration, any AuthorizationUserAgent)] = [
            (configuration(mode: .fragmentJWT, verifier: ClaimsVerifier()), loopback),
            (
                configuration(
                    mode: .formPostJWT, verifier: ClaimsVerifier(), redirectURI: URL(string: "com.example.app:/oauth")!),
                custom
            ),
            (
                configuration(mode: .formPostJWT, verifier: ClaimsVerifier(), supported: ["query", "query.jwt"]),
                loopback
            ),
        ]
        for (configuration, agent) in refusals {
            let manager = CodeFlowManager(
                configuration: configuration, userAgent: agent, context: tokens.context(clock: clock))
            await #expect {
                try await manager.authorize()
            } throws: { error in
                (error as? CodeFlowError)?.code == .invalidConfiguration
            }
        }
        #expect(opened.withLock { $0 } == 0)
        #expect(tokens.requests.isEmpty)
    }

    /// `jwt` is sent as `query.jwt` to a server that lists only that, and as itself otherwise.
    @Test(arguments: [(["query", "query.jwt"], "query.jwt"), (["jwt", "query.jwt"], "jwt"), ([], "jwt")])
    func jwtIsSentAsTheServerNamesIt(supported: [String], sent: String) async throws {
        let opened = Locked<URL?>(nil)
        let opener = ClosureOpener { url in opened.withLock { $0 = url } }
        let manager = CodeFlowManager(
            configuration: configuration(mode: .jwt, verifier: ClaimsVerifier(), supported: supported),
            userAgent: LoopbackUserAgent(opener: opener, timeout: 0.5, onBrowserUnavailable: { _, _ in }),
            context: tokens.context(clock: clock))
        _ = try? await manager.authorize()
        #expect(query(try #require(opened.withLock { $0 }))["response_mode"] == sent)
    }
}
