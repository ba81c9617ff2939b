import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

private let backchannelURL = URL(string: "https://op.example.com/bc-authorize")!

/// CIBA's poll and ping modes with the in-memory transport and an injected clock: every error
/// and timing rule of CIBA Core §7, §10 and §11.
@Suite struct BackchannelAuthenticationFlowTests {
    let clock = TestClock()
    let server = TokenServer()
    let sleeps = Locked<[TimeInterval]>([])
    let acknowledged = Locked<[BackchannelAuthentication]>([])

    func flow(
        _ request: BackchannelAuthenticationRequest = .init(hint: .loginHint("ada@example.com")),
        deliveryMode: BackchannelAuthenticationFlow.DeliveryMode = .poll,
        sleep: DeviceAuthorizationFlow.Sleep? = nil
    ) -> BackchannelAuthenticationFlow {
        BackchannelAuthenticationFlow(
            backchannelAuthenticationEndpoint: backchannelURL,
            tokenEndpoint: tokenURL,
            client: .clientSecretPost(id: "agent", secret: "agent-secret"),
            request: request,
            deliveryMode: deliveryMode,
            sleep: sleep ?? { [clock, sleeps] seconds in
                sleeps.withLock { $0.append(seconds) }
                clock.advance(by: seconds)
                try Task.checkCancellation()
            },
            onRequest: { [acknowledged] request in acknowledged.withLock { $0.append(request) } })
    }

    func acknowledge(expiresIn: Int = 120, interval: Int? = 5, id: String = "req-SECRET-1") {
        let intervalField = interval.map { #","interval":\#($0)"# } ?? ""
        server.reply(json: #"{"auth_req_id":"\#(id)","expires_in":\#(expiresIn)\#(intervalField)}"#)
    }

    func pending(_ code: String = "authorization_pending", description: String? = nil) {
        let described = description.map { #","error_description":"\#($0)""# } ?? ""
        server.reply(status: 400, json: #"{"error":"\#(code)"\#(described)}"#)
    }

    func tokens() {
        server.reply(
            json: #"{"access_token":"at-SECRET","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-SECRET"}"#)
    }

    @Test func pollModeSendsTheRequestThenPollsUntilApproved() async throws {
        let details = [AuthorizationDetail(type: "payment_initiation", fields: ["amount": .string("120 EUR")])]
        let request = BackchannelAuthenticationRequest(
            hint: .loginHint("ada@example.com"), scope: "payments", bindingMessage: "Pay 120 EUR to ACME",
            requestedExpiry: 300, acrValues: ["urn:mace:incommon:iap:silver"], authorizationDetails: details)
        acknowledge()
        pending()
        pending("slow_down")
        pending()
        tokens()
        let token = try await flow(request).obtainToken(for: server.context(clock: clock))
        #expect(token.accessToken == "at-SECRET")
        #expect(sleeps.withLock { $0 } == [5, 5, 10, 10], "interval, then 5 s more for good after slow_down")
        let first = try #require(server.requests.first)
        #expect(first.request.url == backchannelURL)
        let sent = first.body
        #expect(sent.contains("scope=openid%20payments") || sent.contains("scope=openid+payments"))
        #expect(sent.contains("login_hint=ada%40example.com"))
        #expect(sent.contains("binding_message=Pay"))
        #expect(sent.contains("requested_expiry=300"))
        #expect(sent.contains("acr_values=urn"))
        #expect(sent.contains("authorization_details=%5B%7B"))
        #expect(!sent.contains("client_notification_token"), "poll mode sends none")
        #expect(server.requests[1].body.contains("grant_type=urn%3Aopenid%3Aparams%3Agrant-type%3Aciba") == true)
        #expect(server.requests[1].body.contains("auth_req_id=req-SECRET-1") == true)
        let shown = try #require(acknowledged.withLock { $0.first })
        #expect(shown.bindingMessage == "Pay 120 EUR to ACME")
        #expect(!shown.description.contains("req-SECRET"), "the request's identifier is never shown")
        var dumped = ""
        dump(shown, to: &dumped)
        #expect(shown.authRequestID == "req-SECRET-1")
    }

    @Test(arguments: ["access_denied", "expired_token", "transaction_failed"])
    func aDecisionEndsTheWaitTypedWithTheDescription(code: String) async throws {
        acknowledge()
        pending()
        pending(code, description: "The user said no")
        let error = await #expect(throws: OAuthError.self) {
            try await flow().obtainToken(for: server.context(clock: clock))
        }
        #expect(error?.code.rawValue == code)
        #expect(error?.errorDescription == "The user said no")
        #expect(server.requests.count == 3, "no poll after the decision")
    }

    @Test func nothingIsPolledAfterExpiry() async throws {
        acknowledge(expiresIn: 12, interval: nil)
        pending()
        pending()
        let error = await #expect(throws: OAuthError.self) {
            try await flow().obtainToken(for: server.context(clock: clock))
        }
        #expect(error?.code == .expiredToken)
        #expect(sleeps.withLock { $0 } == [5, 5, 2], "the last wait ends at expiry")
        #expect(server.requests.count == 3, "polls at 5 s and 10 s; at 12 s the request has expired")
    }

    @Test func cancellationStopsTheWaitAtOnce() async throws {
        acknowledge(expiresIn: 600)
        for _ in 0..<1000 { pending() }
        let gate = Gate()
        let waiting = flow(sleep: { _ in
            await gate.wait()
            try Task.checkCancellation()
        })
        let context = server.context(clock: clock)
        let task = Task { try await waiting.obtainToken(for: context) }
        #expect(await eventually { server.requests.count == 1 })
        task.cancel()
        await gate.open()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(server.requests.count == 1, "nothing polled after cancellation")
    }

    @Test(arguments: [
        #"{"expires_in":120}"#, #"{"auth_req_id":"","expires_in":120}"#, #"{"auth_req_id":"x"}"#,
        #"{"auth_req_id":"x","expires_in":-1}"#, #"{"auth_req_id":"x","expires_in":120,"interval":-5}"#,
        #"{"auth_req_id":7,"expires_in":120}"#,
    ])
    func aMalformedAcknowledgementIsRefusedBeforeAnyPoll(json: String) async throws {
        server.reply(json: json)
        await #expect(throws: TokenEndpointError.self) {
            try await flow().obtainToken(for: server.context(clock: clock))
        }
        #expect(server.requests.count == 1)
    }

    @Test func theRequestAlwaysAsksForOpenID() {
        #expect(BackchannelAuthenticationRequest(hint: .loginHint("a"), scope: "calendar").scope == "openid calendar")
        #expect(
            BackchannelAuthenticationRequest(hint: .loginHint("a"), scope: "calendar openid").scope == "calendar openid"
        )
    }

    @Test func eachHintIsItsOwnParameterAndTheHintTokenIsNotEchoedInErrors() async throws {
        server.reply(status: 400, json: #"{"error":"unknown_user_id","error_description":"no user hint-SECRET"}"#)
        let error = await #expect(throws: OAuthError.self) {
            try await flow(.init(hint: .loginHintToken("hint-SECRET"))).obtainToken(for: server.context(clock: clock))
        }
        #expect(error?.code.rawValue == "unknown_user_id")
        #expect(server.requests.first?.body.contains("login_hint_token=hint-SECRET") == true)
        #expect(!"\(String(describing: error))".contains("hint-SECRET"), "a secret sent is redacted from the reply")
    }

    // MARK: - Ping

    /// The notification endpoint refuses a wrong bearer and an unknown `auth_req_id`, accepts the
    /// right pair once, and the flow then fetches the tokens once.
    @Test func pingModeWaitsForTheNotificationThenFetchesOnce() async throws {
        let notifications = BackchannelNotifications()
        acknowledge(expiresIn: 600)
        tokens()
        // The fallback poll at expiry does not come in this test: its wait ends only when cancelled.
        let waiting = flow(
            deliveryMode: .ping(notifications), sleep: { _ in try await Task.sleep(for: .seconds(3600)) })
        let context = server.context(clock: clock)
        let task = Task { try await waiting.obtainToken(for: context) }
        #expect(await eventually { !acknowledged.withLock { $0.isEmpty } })
        let sent = try #require(server.requests.first?.body)
        let token = try #require(
            sent.split(separator: "&").first { $0.hasPrefix("client_notification_token=") }?
                .dropFirst("client_notification_token=".count))
        #expect(token.count >= 43, "256 bits")
        let body = Data(#"{"auth_req_id":"req-SECRET-1"}"#.utf8)
        #expect(await notifications.handle(authorization: "Bearer wrong", body: body).statusCode == 401)
        #expect(await notifications.handle(authorization: nil, body: body).statusCode == 401)
        #expect(
            await notifications.handle(
                authorization: "Bearer \(token)", body: Data(#"{"auth_req_id":"another"}"#.utf8)
            ).statusCode == 401)
        #expect(await notifications.handle(authorization: "Bearer \(token)", body: Data("{".utf8)).statusCode == 400)
        #expect(server.requests.count == 1, "no token request before an accepted notification")
        #expect(await notifications.handle(authorization: "bearer \(token)", body: body).isAccepted)
        #expect(try await task.value.accessToken == "at-SECRET")
        #expect(server.requests.count == 2, "fetched once")
        #expect(server.requests[1].body.contains("auth_req_id=req-SECRET-1") == true)
    }

    /// A notification that never comes: one poll at expiry, no more.
    @Test func aPingThatNeverComesEndsInOnePollAtExpiry() async throws {
        let notifications = BackchannelNotifications()
        acknowledge(expiresIn: 60)
        pending("expired_token")
        let error = await #expect(throws: OAuthError.self) {
            try await flow(deliveryMode: .ping(notifications)).obtainToken(for: server.context(clock: clock))
        }
        #expect(error?.code == .expiredToken)
        #expect(sleeps.withLock { $0 } == [60])
        #expect(server.requests.count == 2)
    }

    @Test func notificationTokensAreFreshPerRequest() async throws {
        let notifications = BackchannelNotifications()
        for _ in 0..<2 {
            acknowledge(expiresIn: 5)
            pending("expired_token")
            _ = try? await flow(deliveryMode: .ping(notifications)).obtainToken(for: server.context(clock: clock))
        }
        let tokens = server.requests.map(\.body).filter { $0.contains("client_notification_token=") }
            .compactMap { $0.split(separator: "&").first { $0.hasPrefix("client_notification_token=") } }
        #expect(tokens.count == 2 && tokens[0] != tokens[1])
    }

    @Test func aStepUpAsksTheSameUserForWhatTheChallengeAsks() async throws {
        var stepping = flow(.init(hint: .loginHint("ada@example.com"), scope: "read", bindingMessage: "Agent"))
        #expect(!stepping.canStepUp, "off unless allowed")
        let token = OAuthToken(
            accessToken: "at-0", tokenType: "Bearer", expiresAt: nil, scope: "openid read",
            idToken: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZGEifQ.")
        let details = [AuthorizationDetail(type: "payment_initiation", fields: ["amount": .string("120 EUR")])]
        let requirement = StepUpRequirement(
            reason: .insufficientAuthorizationDetails, scope: "payments", authorizationDetails: details)
        await #expect(throws: StepUpError.self) {
            _ = try await stepping.stepUp(token, to: requirement, for: server.context(clock: clock))
        }
        stepping.allowsStepUp = true
        #expect(stepping.canStepUp)
        acknowledge()
        tokens()
        let stepped = try await stepping.stepUp(token, to: requirement, for: server.context(clock: clock))
        #expect(stepped.accessToken == "at-SECRET")
        let sent = try #require(server.requests.first?.body)
        #expect(sent.contains("id_token_hint=eyJhbGciOiJub25lIn0"), "the session's user, by its ID token")
        #expect(!sent.contains("login_hint="), "exactly one hint")
        #expect(sent.contains("scope=openid%20read%20payments") || sent.contains("scope=openid+read+payments"))
        #expect(sent.contains("authorization_details=%5B%7B%22amount%22%3A%22120+EUR%22"))
        #expect(sent.contains("binding_message=Agent"))
    }

    @Test func processesSharingAStoreAskOnceForTheRequestsLifetime() {
        #expect(flow(.init(hint: .loginHint("ada"), requestedExpiry: 120)).initialTokenLockTimeout == 180)
        #expect(flow().initialTokenLockTimeout == 660, "10 minutes and one more without a requested expiry")
    }

    /// Signs request objects by recording their claims.
    struct RecordingSigner: RequestObjectSigner {
        let requestObjectAlgorithm: String
        let signed = Locked<[(String, String, [String: JSONValue])]>([])
        func requestObject(clientID: String, audience: String, parameters: [String: JSONValue]) async throws -> String {
            signed.withLock { $0.append((clientID, audience, parameters)) }
            return "signed.request.object"
        }
    }

    @Test func aSignedRequestSendsTheParametersOnlyAsTheClaimsOfTheRequestObject() async throws {
        let signer = RecordingSigner(requestObjectAlgorithm: "PS256")
        var signed = flow(
            .init(
                hint: .loginHint("ada@example.com"), bindingMessage: "Pay", requestedExpiry: 300,
                authorizationDetails: [AuthorizationDetail(type: "payment_initiation")]))
        signed.requestObjectSigning = .init(signer: signer, audience: "https://op.example.com")
        acknowledge()
        tokens()
        _ = try await signed.obtainToken(for: server.context(clock: clock))
        let body = try #require(server.requests.first?.body)
        #expect(body.hasPrefix("request=signed.request.object&"), "\(body)")
        for name in ["login_hint", "scope", "binding_message", "requested_expiry", "authorization_details"] {
            #expect(!body.contains("\(name)="), "\(name) only inside the signed request")
        }
        let (clientID, audience, claims) = try #require(signer.signed.withLock { $0.first })
        #expect(clientID == "agent" && audience == "https://op.example.com")
        #expect(claims["login_hint"] == .string("ada@example.com"))
        #expect(claims["scope"] == .string("openid"))
        #expect(claims["requested_expiry"] == .number(300), "a number in the JWT")
        #expect(claims["authorization_details"] == .array([.object(["type": .string("payment_initiation")])]))
    }

    @Test func aProviderThatListsOtherSigningAlgorithmsIsRefusedBeforeAnythingIsSent() throws {
        let metadata = try AuthorizationServerMetadata(fields: [
            "issuer": .string("https://op.example.com"), "token_endpoint": .string("https://op.example.com/token"),
            "backchannel_authentication_endpoint": .string("https://op.example.com/bc"),
            "backchannel_token_delivery_modes_supported": .array([.string("poll")]),
            "backchannel_authentication_request_signing_alg_values_supported": .array([.string("ES256")]),
        ])
        #expect(metadata.backchannelAuthenticationRequestSigningAlgValuesSupported == ["ES256"])
        let request = BackchannelAuthenticationRequest(hint: .loginHint("ada"))
        #expect(throws: TokenEndpointError.self) {
            _ = try metadata.backchannelAuthenticationFlow(
                client: .none(id: "agent"), request: request,
                requestObjectSigner: RecordingSigner(requestObjectAlgorithm: "PS256"))
        }
        let flow = try metadata.backchannelAuthenticationFlow(
            client: .none(id: "agent"), request: request,
            requestObjectSigner: RecordingSigner(requestObjectAlgorithm: "ES256"))
        #expect(flow.requestObjectSigning?.audience == "https://op.example.com")
    }

    @Test func aTokenErrorThatEchoesTheRequestsIdentifierShowsItRedacted() async throws {
        acknowledge(id: "req-SECRET-echoed")
        server.reply(
            status: 400,
            json:
                #"{"error":"access_denied","error_description":"req-SECRET-echoed was denied","auth_req_id":"req-SECRET-echoed"}"#
        )
        let error = await #expect(throws: OAuthError.self) {
            try await flow().obtainToken(for: server.context(clock: clock))
        }
        let shown = "\(String(describing: error)) \(String(reflecting: error)) \(error?.errorDescription ?? "")"
        #expect(!shown.contains("req-SECRET"), "\(shown)")
        #expect(error?.code == .accessDenied)
    }
}
