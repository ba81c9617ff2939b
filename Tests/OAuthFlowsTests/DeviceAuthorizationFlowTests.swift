import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

private let deviceURL = URL(string: "https://auth.example.com/device")!

@Suite struct DeviceAuthorizationFlowTests {
    let clock = TestClock()
    let server = TokenServer()
    let sleeps = Locked<[TimeInterval]>([])
    let reported = Locked<[DeviceAuthorization]>([])

    func flow() -> DeviceAuthorizationFlow {
        DeviceAuthorizationFlow(
            deviceAuthorizationEndpoint: deviceURL,
            tokenEndpoint: tokenURL,
            client: .none(id: "tv"),
            scope: "profile",
            sleep: { [clock, sleeps] seconds in
                sleeps.withLock { $0.append(seconds) }
                clock.advance(by: seconds)
                try Task.checkCancellation()
            },
            onUserCode: { [reported] authorization in reported.withLock { $0.append(authorization) } }
        )
    }

    func queueCodes(expiresIn: Int = 600, interval: Int? = 5) {
        let intervalField = interval.map { #","interval":\#($0)"# } ?? ""
        server.reply(
            json:
                #"{"device_code":"dev-secret","user_code":"WDJB-MJHT","verification_uri":"https://auth.example.com/activate","#
                + #""verification_uri_complete":"https://auth.example.com/activate?user_code=WDJB-MJHT","expires_in":\#(expiresIn)\#(intervalField)}"#
        )
    }

    func pending(_ code: String = "authorization_pending") {
        server.reply(status: 400, json: #"{"error":"\#(code)"}"#)
    }

    @Test func reportsTheCodesThenPollsPendingSlowDownUntilApproved() async throws {
        queueCodes()
        pending()
        pending("slow_down")
        pending()
        server.reply(json: #"{"access_token":"at","token_type":"Bearer","expires_in":60,"refresh_token":"rt"}"#)
        let token = try await flow().obtainToken(for: server.context(clock: clock))
        #expect(token.accessToken == "at")
        let shown = try #require(reported.withLock { $0.first })
        #expect(shown.userCode == "WDJB-MJHT")
        #expect(shown.verificationURI.absoluteString == "https://auth.example.com/activate")
        #expect(shown.verificationURIComplete?.query == "user_code=WDJB-MJHT")
        #expect(!shown.description.contains("dev-secret"))
        #expect(sleeps.withLock { $0 } == [5, 5, 10, 10], "interval, then 5 s more after slow_down")
        #expect(server.requests.first?.request.url == deviceURL)
        #expect(server.requests.first?.body == "scope=profile&client_id=tv")
        #expect(
            server.requests[1].body
                == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&device_code=dev-secret&client_id=tv"
        )
    }

    @Test func accessDeniedStopsPolling() async throws {
        queueCodes()
        pending()
        pending("access_denied")
        let error = await #expect(throws: OAuthError.self) {
            try await flow().obtainToken(for: server.context(clock: clock))
        }
        #expect(error?.code == .accessDenied)
        #expect(server.requests.count == 3)
    }

    @Test func expiredTokenStopsPolling() async throws {
        queueCodes()
        pending("expired_token")
        let error = await #expect(throws: OAuthError.self) {
            try await flow().obtainToken(for: server.context(clock: clock))
        }
        #expect(error?.code == .expiredToken)
    }

    @Test func theExpiresInDeadlineStopsPollingWithoutAsking() async throws {
        queueCodes(expiresIn: 12, interval: nil)
        pending()
        pending()
        let error = await #expect(throws: OAuthError.self) {
            try await flow().obtainToken(for: server.context(clock: clock))
        }
        #expect(error?.code == .expiredToken)
        #expect(server.requests.count == 3, "polls at 5 s and 10 s; at 15 s the code has expired")
    }

    @Test func cancellationStopsPolling() async throws {
        queueCodes()
        for _ in 0..<1000 { pending() }
        let gate = Gate()
        let flow = DeviceAuthorizationFlow(
            deviceAuthorizationEndpoint: deviceURL,
            tokenEndpoint: tokenURL,
            client: .none(id: "tv"),
            sleep: { _ in
                await gate.wait()
                try Task.checkCancellation()
            },
            onUserCode: { _ in }
        )
        let context = server.context(clock: clock)
        let task = Task { try await flow.obtainToken(for: context) }
        #expect(await eventually { server.requests.count == 1 })
        task.cancel()
        await gate.open()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(server.requests.count == 1)
    }
}
