import AuthenticatedRequests
import Foundation
import OAuthFlows
import OpenIDConnect
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// OpenID Connect CIBA against idpyoidc 5.0.0's backchannel authentication endpoint and CIBA grant,
/// with the shims and the scriptable authentication device of `Tests/OpenIDProvider/ciba.py`: the
/// tests play the user's side (approve, deny, ignore) through the device's test routes, and count
/// at the provider what the client sent: backchannel requests, polls and their times, grants.
///
/// Tokens live an hour; only the expiry test uses a short request lifetime, and it judges from the
/// provider's record of the polls.
@Suite(.enabled(if: IdpyoidcProvider.plain.isConfigured, IdpyoidcProvider.plain.notRunReason))
struct BackchannelIdpyoidcEndToEndTests {
    static let cibaGrant = "urn:openid:params:grant-type:ciba"

    /// A CIBA client of its own (`client_secret_basic`) with the device settings of ciba.py.
    func makeClient(_ settings: [String: Any]) async throws -> (id: String, secret: String) {
        let reply = try await IdpyoidcProvider.plain.json("test/clients", method: "POST", body: ["ciba": settings])
        return (try #require(reply["client_id"] as? String), try #require(reply["client_secret"] as? String))
    }

    func openID(_ client: (id: String, secret: String)) async throws -> OpenIDClient {
        let provider = try await OpenIDProvider.discover(issuer: try IdpyoidcProvider.plain.base)
        return OpenIDClient(provider: provider, client: .clientSecretBasic(id: client.id, secret: client.secret))
    }

    /// What the provider received from the client, oldest first (no identifiers, no tokens).
    func received(_ clientID: String) async throws -> [[String: Any]] {
        var request = URLRequest(
            url: try IdpyoidcProvider.plain.base.appendingPathComponent("test/ciba/requests/\(clientID)"))
        request.httpMethod = "GET"
        let (data, _) = try await URLSession.shared.data(for: request)
        return try JSONSerialization.jsonObject(with: data) as? [[String: Any]] ?? []
    }

    func stats(_ clientID: String) async throws -> [String: Int] {
        try await IdpyoidcProvider.plain.json("test/stats/\(clientID)").compactMapValues { $0 as? Int }
    }

    /// The user decides on their device; returns the statuses the client's ping endpoint answered.
    @discardableResult
    func decide(_ clientID: String, _ action: String, ping: String = "right") async throws -> [Int] {
        let reply = try await IdpyoidcProvider.plain.json(
            "test/ciba/decide", method: "POST", body: ["client_id": clientID, "action": action, "ping": ping])
        return reply["pings"] as? [Int] ?? []
    }

    /// Waits until the provider has received `count` backchannel requests from `clientID`
    /// (bounded: a minute).
    func waitForRequests(_ clientID: String, count: Int = 1) async throws -> [[String: Any]] {
        for _ in 0..<600 {
            let requests = try await received(clientID)
            if requests.count >= count { return requests }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the provider never received \(count) backchannel request(s)")
        return try await received(clientID)
    }

    /// When helper processes start their requests together: far enough ahead for three processes
    /// to be spawned and to discover the provider on a loaded machine.
    func startTogether() -> Date { Date().addingTimeInterval(8) }

    /// Three helper processes sharing the store `folder`, each sending `requests` concurrent
    /// requests that need the user's approval, all starting at the returned date.
    func startThreeProcesses(_ client: (id: String, secret: String), store folder: URL, requests: Int) throws
        -> (start: Date, runs: [Task<TestHelperProcess.Outcome, any Error>])
    {
        let issuer = try IdpyoidcProvider.plain.base.absoluteString
        let start = startTogether()
        let runs = (0..<3).map { _ in
            Task {
                try await TestHelperProcess.run(
                    ["ciba-requests", folder.path, issuer, client.id, client.secret, "diana", String(requests)],
                    environment: ["AUTHREQ_HELPER_START_AT": String(start.timeIntervalSince1970)])
            }
        }
        return (start, runs)
    }

    func waitUntil(_ date: Date) async throws {
        let left = date.timeIntervalSinceNow
        if left > 0 { try await Task.sleep(for: .milliseconds(Int(left * 1000))) }
    }

    struct UserInfoGet: AuthenticatedResource {
        typealias Output = Data
        let authenticator: any RequestAuthenticator
        let url: URL
        func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
    }

    /// UserInfo's `sub` and `email`, read with the session's token.
    struct Claims: Sendable {
        let subject: String?
        let email: String?
    }

    func userInfo(_ oidc: OpenIDClient, _ authenticator: OAuthAuthenticator) async throws -> Claims {
        let data = try await UserInfoGet(
            authenticator: authenticator, url: try #require(oidc.provider.userInfoEndpoint)
        )
        .request()
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        return Claims(subject: object["sub"] as? String, email: object["email"] as? String)
    }

    @Test func anApprovalInPollModeSignsInWithAValidatedIDTokenAndASecondProcessRestoresTheSession() async throws {
        let client = try await makeClient(["mode": "poll", "interval": 1])
        let oidc = try await openID(client)
        let details = [
            AuthorizationDetail(
                type: "payment_initiation",
                fields: ["instructedAmount": .object(["currency": .string("EUR"), "amount": .string("120.00")])])
        ]
        let flow = try oidc.backchannelSessionFlow(
            request: BackchannelAuthenticationRequest(
                hint: .loginHint("diana@example.com"), scope: "openid email offline_access",
                bindingMessage: "Pay 120 EUR to ACME", authorizationDetails: details))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ciba-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let authenticator = OAuthAuthenticator(flow: flow, store: FileTokenStore(directory: folder))

        // The request waits for the user, who approves on their device.
        let answer = Task { try await userInfo(oidc, authenticator) }
        let requests = try await waitForRequests(client.id)
        try await Task.sleep(for: .milliseconds(1500))  // a poll or two answered authorization_pending
        try await decide(client.id, "approve")
        let claims = try await answer.value
        #expect(claims.email == "diana@example.com")

        // What the provider received is what was sent.
        let first = try #require(requests.first)
        #expect(first["login_hint"] as? String == "diana@example.com")
        #expect(first["binding_message"] as? String == "Pay 120 EUR to ACME")
        #expect(first["scope"] as? String == "openid email offline_access")
        let sentDetails = try #require(first["authorization_details"] as? [[String: Any]])
        #expect(sentDetails.count == 1 && sentDetails[0]["type"] as? String == "payment_initiation")
        let amount = sentDetails[0]["instructedAmount"] as? [String: Any]
        #expect(amount?["amount"] as? String == "120.00" && amount?["currency"] as? String == "EUR")
        let answers = try #require(try await received(client.id).first?["answers"] as? [String])
        #expect(answers.first == "authorization_pending" && answers.last == "tokens", "\(answers)")

        // The ID token was validated and kept with the session.
        let token = try #require(try await authenticator.currentCredential())
        #expect(claims.subject != nil && token.idTokenClaims?.subject == claims.subject)
        #expect(token.idTokenClaims?.audiences.contains(client.id) == true)

        // Another process restores the session from the store and never asks the user again.
        let outcome = try await TestHelperProcess.run([
            "ciba-requests", folder.path, try IdpyoidcProvider.plain.base.absoluteString, client.id, client.secret,
            "diana@example.com", "3",
        ])
        #expect(outcome.status == 0, "\(outcome.errors)")
        #expect(outcome.json?["successes"] as? Int == 3, "\(outcome.output)")
        let counts = try await stats(client.id)
        #expect(counts["backchannel"] == 1, "\(counts)")
        #expect(counts[Self.cibaGrant] == 1, "\(counts)")
    }

    @Test func aDenialIsAccessDeniedWithTheProvidersDescription() async throws {
        let client = try await makeClient(["mode": "poll", "interval": 1])
        let oidc = try await openID(client)
        let flow = try oidc.backchannelSessionFlow(
            request: BackchannelAuthenticationRequest(hint: .loginHint("diana"), bindingMessage: "Deny me"))
        let authenticator = OAuthAuthenticator(flow: flow, store: InMemoryTokenStore())
        let answer = Task { try await userInfo(oidc, authenticator) }
        _ = try await waitForRequests(client.id)
        try await decide(client.id, "deny")
        let error = await #expect(throws: (any Error).self) { try await answer.value }
        let oauth = try #require(Self.oauthError(in: error), "\(String(describing: error))")
        #expect(oauth.code == .accessDenied)
        #expect(oauth.errorDescription == "The user denied the request.")
        #expect(try await stats(client.id)[Self.cibaGrant] == nil)
    }

    @Test func aRequestNobodyAnswersExpiresAndNothingIsPolledAfterItsExpiry() async throws {
        // The one test with a short lifetime: it is about expiry, judged from the provider's record.
        // 15 s: the expiry counts from when the request was sent, and a loaded provider may take
        // seconds to answer it; polls every second still come well before it.
        let client = try await makeClient(["mode": "poll", "interval": 1, "expires_in": 15])
        let oidc = try await openID(client)
        let flow = try oidc.backchannelSessionFlow(request: BackchannelAuthenticationRequest(hint: .loginHint("diana")))
        let error = await #expect(throws: OAuthError.self) {
            _ = try await flow.obtainToken(for: AuthenticationContext(transport: URLSessionTransport()))
        }
        #expect(error?.code == .expiredToken)
        let record = try #require(try await received(client.id).first)
        let polls = try #require(record["polls"] as? [Double])
        let expiresIn = try #require(record["expires_in"] as? Double)
        #expect(!polls.isEmpty)
        #expect(polls.allSatisfy { $0 < expiresIn }, "polled after the expiry: \(polls), expires_in \(expiresIn)")
        #expect((record["answers"] as? [String])?.allSatisfy { $0 == "authorization_pending" } == true)
    }

    @Test func slowDownAddsFiveSecondsToTheIntervalForGood() async throws {
        let client = try await makeClient(["mode": "poll", "interval": 1, "slow_down": 1])
        let oidc = try await openID(client)
        let flow = try oidc.backchannelSessionFlow(request: BackchannelAuthenticationRequest(hint: .loginHint("diana")))
        let authenticator = OAuthAuthenticator(flow: flow, store: InMemoryTokenStore())
        let answer = Task { try await userInfo(oidc, authenticator) }
        _ = try await waitForRequests(client.id)
        // Three polls: slow_down, then authorization_pending twice, 6 s apart each.
        var record: [String: Any] = [:]
        for _ in 0..<400 {
            record = try #require(try await received(client.id).first)
            if (record["polls"] as? [Double] ?? []).count >= 3 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        try await decide(client.id, "approve")
        _ = try await answer.value
        record = try #require(try await received(client.id).first)
        let polls = try #require(record["polls"] as? [Double])
        let answers = try #require(record["answers"] as? [String])
        #expect(answers.first == "slow_down", "\(answers)")
        #expect(answers.dropFirst().dropLast().allSatisfy { $0 == "authorization_pending" }, "\(answers)")
        #expect(answers.last == "tokens")
        #expect(polls.count >= 3, "\(polls)")
        // Every gap after the slow_down is at least the interval plus 5 s (a loaded machine only
        // makes them longer).
        let gaps = zip(polls.dropFirst(), polls).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= 5.9 }, "gaps after slow_down: \(gaps)")
    }

    @Test func aPingFetchesTheTokensOnceAndAWrongBearerOrUnknownRequestIsRefused() async throws {
        let notifications = BackchannelNotifications()
        let endpoint = try await LoopbackHTTPServer { request in
            // The application's own HTTP server hands the ping to the SDK and answers its status.
            let outcome = Locked<Int>(500)
            let done = DispatchSemaphore(value: 0)
            Task {
                let decided = await notifications.handle(
                    authorization: request.header("Authorization"), body: request.body)
                outcome.withLock { $0 = decided.statusCode }
                done.signal()
            }
            done.wait()
            return LoopbackHTTPServer.Reply(status: outcome.withLock { $0 })
        }
        defer { Task { try? await endpoint.shutdown() } }
        let client = try await makeClient([
            "mode": "ping", "interval": 1,
            "notification_endpoint": endpoint.baseURL.appendingPathComponent("ciba").absoluteString,
        ])
        let oidc = try await openID(client)
        let flow = try oidc.backchannelSessionFlow(
            request: BackchannelAuthenticationRequest(hint: .loginHint("diana")), deliveryMode: .ping(notifications))
        let authenticator = OAuthAuthenticator(flow: flow, store: InMemoryTokenStore())
        let answer = Task { try await userInfo(oidc, authenticator) }
        let requests = try await waitForRequests(client.id)
        #expect(requests.first?["mode"] as? String == "ping")
        #expect(requests.first?["has_notification_token"] as? Bool == true)

        #expect(try await decide(client.id, "approve", ping: "wrong_bearer") == [401])
        #expect(try await decide(client.id, "approve", ping: "unknown_id") == [401])
        try await Task.sleep(for: .seconds(2))  // two poll intervals: a poll-mode client would have polled
        #expect((try await received(client.id).first?["polls"] as? [Double])?.isEmpty == true)

        #expect(try await decide(client.id, "approve") == [204])
        let claims = try await answer.value
        #expect(claims.subject != nil)
        let record = try #require(try await received(client.id).first)
        #expect((record["polls"] as? [Double])?.count == 1, "fetched once: \(record)")
        #expect(try await stats(client.id)[Self.cibaGrant] == 1)
    }

    @Test func threeProcessesOfEightRequestsAskTheUserOnce() async throws {
        let client = try await makeClient(["mode": "poll", "interval": 1])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ciba-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (start, runs) = try startThreeProcesses(client, store: folder, requests: 8)
        _ = try await waitForRequests(client.id)
        try await waitUntil(start.addingTimeInterval(2))  // the other processes wait for the store's lock
        try await decide(client.id, "approve")
        for run in runs {
            let outcome = try await run.value
            #expect(outcome.status == 0, "\(outcome.errors)")
            #expect(outcome.json?["successes"] as? Int == 8, "\(outcome.output)")
        }
        let counts = try await stats(client.id)
        #expect(counts["backchannel"] == 1, "\(counts)")
        #expect(counts[Self.cibaGrant] == 1, "\(counts)")
    }

    @Test func aDenialEndsTheWaitOfEveryProcessWithoutAskingAgain() async throws {
        let client = try await makeClient(["mode": "poll", "interval": 1])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ciba-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (start, runs) = try startThreeProcesses(client, store: folder, requests: 2)
        _ = try await waitForRequests(client.id)
        // Every process is waiting by then (a process that starts after the denial asks anew).
        try await waitUntil(start.addingTimeInterval(3))
        try await decide(client.id, "deny")
        for run in runs {
            let outcome = try await run.value
            #expect(outcome.json?["successes"] as? Int == 0, "\(outcome.output)")
        }
        try await Task.sleep(for: .seconds(1))
        #expect(try await stats(client.id)["backchannel"] == 1, "the user was asked again")
    }

    struct Payment: AuthenticatedResource {
        typealias Output = Data
        let authenticator: any RequestAuthenticator
        let url: URL
        func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
    }

    @Test func aPaymentThatNeedsApprovalStepsUpThroughCIBAForTheDetailsTheResourceAsks() async throws {
        let client = try await makeClient(["mode": "poll", "interval": 1])
        let oidc = try await openID(client)
        let flow = try oidc.backchannelSessionFlow(
            request: BackchannelAuthenticationRequest(hint: .loginHint("diana"), scope: "openid email"),
            allowsStepUp: true)
        let authenticator = OAuthAuthenticator(flow: flow, store: InMemoryTokenStore())
        let signIn = Task { try await userInfo(oidc, authenticator) }
        _ = try await waitForRequests(client.id)
        try await decide(client.id, "approve")
        let before = try await signIn.value
        let first = try #require(try await authenticator.currentCredential())

        // The resource answers 403 insufficient_authorization_details with the payment it needs;
        // the SDK asks the same user for it, and the request goes through once they approve.
        let url = try IdpyoidcProvider.plain.base.appendingPathComponent("test/ciba/payment")
        let payment = Task { try await Payment(authenticator: authenticator, url: url).request() }
        let requests = try await waitForRequests(client.id, count: 2)
        try await decide(client.id, "approve")
        let paid = try JSONSerialization.jsonObject(with: try await payment.value) as? [String: Any]
        #expect(paid?["paid"] as? Bool == true)

        let second = requests[1]
        #expect(second["has_id_token_hint"] as? Bool == true, "the session's user, by its ID token")
        #expect(second["login_hint"] is NSNull)
        let details = try #require(second["authorization_details"] as? [[String: Any]])
        #expect(details.first?["type"] as? String == "payment_initiation")
        #expect((details.first?["instructedAmount"] as? [String: Any])?["amount"] as? String == "120.00")
        let stepped = try #require(try await authenticator.currentCredential())
        #expect(stepped.accessToken != first.accessToken)
        #expect(stepped.idTokenClaims?.subject == before.subject, "the same user")
        #expect(try await stats(client.id)[Self.cibaGrant] == 2)
    }

    @Test func authreqLoginWithCIBAShowsTheBindingMessageAndStoresTheSessionForTheNextProcess() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let client = try await makeClient(["mode": "poll", "interval": 1])
        let secret = ["AUTHREQ_CLIENT_SECRET": client.secret]
        let login = try tool.start(
            [
                "login", "--ciba", "--login-hint", "diana@example.com", "--binding-message", "CLI 4711",
                "--issuer", try IdpyoidcProvider.plain.base.absoluteString, "--client-id", client.id,
                "--scope", "openid email offline_access",
            ], environment: secret)
        let requests = try await waitForRequests(client.id)
        #expect(requests.first?["binding_message"] as? String == "CLI 4711")
        for _ in 0..<50 where !login.stderrSoFar.contains("CLI 4711") { try await Task.sleep(for: .milliseconds(100)) }
        #expect(login.stderrSoFar.contains("Approve it only if it shows:  CLI 4711"), "\(login.stderrSoFar)")
        #expect(login.stderrSoFar.contains("diana@example.com"))
        try await decide(client.id, "approve")
        let outcome = try await login.finish()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("Signed in: profile 'default'"))

        // A new process uses the stored session: no new request to the user.
        let token = try await tool.run(["token"], environment: secret)
        #expect(token.status == 0, "\(token.stderr)")
        #expect(!token.stdout.isEmpty)
        let counts = try await stats(client.id)
        #expect(counts["backchannel"] == 1 && counts[Self.cibaGrant] == 1, "\(counts)")
        let profile = try String(contentsOf: tool.configurationFile, encoding: .utf8)
        #expect(profile.contains(#""grant" : "ciba""#) || profile.contains(#""grant":"ciba""#), "\(profile)")
    }

    @Test func authreqLoginWithCIBAEndsWithTheDenialAndExitStatusThree() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let client = try await makeClient(["mode": "poll", "interval": 1])
        let login = try tool.start(
            [
                "login", "--ciba", "--login-hint", "diana", "--issuer", try IdpyoidcProvider.plain.base.absoluteString,
                "--client-id", client.id,
            ], environment: ["AUTHREQ_CLIENT_SECRET": client.secret])
        _ = try await waitForRequests(client.id)
        try await decide(client.id, "deny")
        let outcome = try await login.finish()
        #expect(outcome.status == 3, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("diana denied the request: The user denied the request."), "\(outcome.stderr)")
    }

    /// The `OAuthError` a request failed with, itself or underneath an `AuthenticationError`.
    static func oauthError(in error: (any Error)?) -> OAuthError? {
        if let oauth = error as? OAuthError { return oauth }
        if let wrapped = error as? AuthenticationError { return oauthError(in: wrapped.underlyingError) }
        return nil
    }
}
