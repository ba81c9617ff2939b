import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private let deviceURL = URL(string: "https://auth.example.com/device")!
private let issuerURL = URL(string: "https://auth.example.com")!

/// Issue 11, item 1: every reply is parsed in linear time with bounded nesting, and every number a
/// server sends is checked before it becomes a date, a sleep or an integer.
@Suite struct ServerReplyHardeningTests {
    let clock = TestClock()
    let server = TokenServer()

    func token(_ json: String) async throws -> OAuthToken {
        server.reply(json: json)
        return try await TokenEndpoint(url: tokenURL, client: .none(id: "app"))
            .requestToken(grantType: "client_credentials", context: server.context(clock: clock))
    }

    static func nested(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    @Test func deepNestingInATokenReplyIsAClearErrorAndNotACPUStall() async throws {
        // 511 nested arrays cost about a second of CPU with JSONDecoder into a recursive enum.
        let error = await #expect(throws: TokenEndpointError.self) {
            try await token(#"{"access_token":"at","x":\#(Self.nested(511))}"#)
        }
        #expect(error?.code == .invalidResponse)
        let parsing = try #require(error?.underlyingError as? JSONParsingError)
        #expect(parsing.reason.contains("nesting deeper than 32"))
    }

    @Test func deepNestingInDiscoveryMetadataIsAClearError() async throws {
        let nested = Self.nested(2_000)
        server.reply(json: #"{"issuer":"https://auth.example.com","x":\#(nested)}"#)
        let error = await #expect(throws: TokenEndpointError.self) {
            _ = try await AuthorizationServerMetadata.discover(issuer: issuerURL, context: server.context(clock: clock))
        }
        #expect((error?.underlyingError as? JSONParsingError)?.reason.contains("nesting") == true)
    }

    @Test func nestingWithinTheLimitIsKept() async throws {
        let token = try await token(#"{"access_token":"at","x":\#(Self.nested(30))}"#)
        #expect(token.additionalFields["x"] != nil)
    }

    @Test func aStoredTokenWithDeeplyNestedFieldsIsCorruptNotAStall() throws {
        let json = #"{"access_token":"at","additional_fields":{"x":\#(Self.nested(5_000))}}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(OAuthToken.self, from: Data(json.utf8)) }
    }

    @Test(arguments: [
        #""NaN""#, #""nan""#, #""Infinity""#, #""-Infinity""#, #""inf""#, "-1", #""-5""#, #""soon""#, "true", "[]",
        "{}", #""0x10""#,
    ])
    func anUnusableExpiresInIsATypedError(value: String) async throws {
        let error = await #expect(throws: TokenEndpointError.self) {
            try await token(#"{"access_token":"at","expires_in":\#(value)}"#)
        }
        #expect(error?.code == .invalidField)
        #expect(error?.field == "expires_in")
    }

    @Test func aHugeExpiresInIsClampedToTenYearsAndTheTokenCanBeStoredAndPrinted() async throws {
        for value in ["1e300", #""1e300""#, "1.7976931348623157e308"] {
            let token = try await token(#"{"access_token":"at","expires_in":\#(value)}"#)
            #expect(token.expiresAt == clock.now.addingTimeInterval(315_360_000))
            #expect(token.description.contains("expiresAt"))
            let stored = try JSONEncoder().encode(token)
            #expect(try JSONDecoder().decode(OAuthToken.self, from: stored).expiresAt == token.expiresAt)
        }
    }

    @Test func aNumberBeyondDoubleIsRejectedByTheParser() async throws {
        let error = await #expect(throws: TokenEndpointError.self) {
            try await token(#"{"access_token":"at","expires_in":1e400}"#)
        }
        #expect((error?.underlyingError as? JSONParsingError)?.reason.contains("out of range") == true)
    }

    @Test func zeroAndQuotedNumbersAreAccepted() async throws {
        let expired = try await token(#"{"access_token":"at","expires_in":0}"#)
        #expect(expired.expiresAt == clock.now)
        #expect(expired.issuedAt == clock.now)
        let quoted = try await token(#"{"access_token":"at","expires_in":" 3600 "}"#)
        #expect(quoted.expiresAt == clock.now.addingTimeInterval(3600))
    }

    @Test func aStoredTokenWithANonFiniteOrAbsurdExpiryIsCorrupt() throws {
        for value in ["1e300", "-1", "9999999999999"] {
            let json = #"{"access_token":"at","expires_at":\#(value)}"#
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(OAuthToken.self, from: Data(json.utf8)) }
        }
    }

    @Test func aTokenWithANonFiniteDateStillPrints() {
        let token = OAuthToken(accessToken: "at", expiresAt: Date(timeIntervalSince1970: .nan))
        #expect(token.description.contains("nan"))
        var dumped = ""
        dump(token, to: &dumped)
        #expect(!dumped.contains("\"at\""))
    }

    @Test func nonStringTokenFieldsAreTypedErrors() async throws {
        let error = await #expect(throws: TokenEndpointError.self) {
            try await token(#"{"access_token":"at","refresh_token":42}"#)
        }
        #expect(error?.code == .invalidField)
        #expect(error?.field == "refresh_token")
    }

    // MARK: Device replies

    func deviceFlow(sleeps: Locked<[TimeInterval]>) -> DeviceAuthorizationFlow {
        DeviceAuthorizationFlow(
            deviceAuthorizationEndpoint: deviceURL,
            tokenEndpoint: tokenURL,
            client: .none(id: "tv"),
            sleep: { [clock] seconds in
                sleeps.withLock { $0.append(seconds) }
                clock.advance(by: seconds)
            },
            onUserCode: { _ in }
        )
    }

    func deviceReply(expiresIn: String, interval: String) {
        server.reply(
            json: #"{"device_code":"dc-secret","user_code":"ABCD","verification_uri":"https://auth.example.com/a","#
                + #""expires_in":\#(expiresIn),"interval":\#(interval)}"#
        )
    }

    @Test(arguments: [#""nan""#, #""Infinity""#, "-1", #""-Infinity""#, #""NaN""#, #""x""#])
    func anUnusableIntervalIsATypedErrorNotATrap(interval: String) async throws {
        deviceReply(expiresIn: "600", interval: interval)
        let error = await #expect(throws: TokenEndpointError.self) {
            try await deviceFlow(sleeps: Locked([])).requestAuthorization(context: server.context(clock: clock))
        }
        #expect(error?.field == "interval")
    }

    @Test(arguments: ["0", "-5", #""NaN""#, #""Infinity""#])
    func anUnusableDeviceCodeLifetimeIsATypedError(expiresIn: String) async throws {
        deviceReply(expiresIn: expiresIn, interval: "5")
        let error = await #expect(throws: TokenEndpointError.self) {
            try await deviceFlow(sleeps: Locked([])).requestAuthorization(context: server.context(clock: clock))
        }
        #expect(error?.field == "expires_in")
    }

    @Test func aHugeIntervalNeverSleepsPastTheDeadline() async throws {
        // expires_in 2 with interval 1e11: it used to trap converting the sleep to nanoseconds,
        // and with 1e9 it slept long after the codes had expired.
        for interval in ["1e11", "1e9", "1e300"] {
            deviceReply(expiresIn: "2", interval: interval)
            let sleeps = Locked<[TimeInterval]>([])
            let flow = deviceFlow(sleeps: sleeps)
            let started = clock.now
            let error = await #expect(throws: OAuthError.self) {
                try await flow.obtainToken(for: server.context(clock: clock))
            }
            #expect(error?.code == .expiredToken)
            #expect(sleeps.withLock { $0 }.reduce(0, +) <= 2)
            #expect(clock.now.timeIntervalSince(started) <= 2)
        }
        #expect(!server.requests.contains { $0.form["grant_type"] == DeviceAuthorizationFlow.grantType })
    }

    @Test func slowDownNeverPushesAPollPastTheDeadline() async throws {
        deviceReply(expiresIn: "12", interval: "5")
        for _ in 0..<5 { server.reply(status: 400, json: #"{"error":"slow_down"}"#) }
        let sleeps = Locked<[TimeInterval]>([])
        let started = clock.now
        await #expect(throws: OAuthError.self) {
            try await deviceFlow(sleeps: sleeps).obtainToken(for: server.context(clock: clock))
        }
        #expect(clock.now.timeIntervalSince(started) <= 12)
        #expect(sleeps.withLock { $0 } == [5, 7])
    }

    @Test func theDefaultSleepClampsWhatItCannotConvert() async throws {
        try await DeviceAuthorizationFlow.defaultSleep(-.infinity)
        try await DeviceAuthorizationFlow.defaultSleep(.nan)
        let task = Task { try await DeviceAuthorizationFlow.defaultSleep(1e300) }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
