import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An unknown refresh outcome (a process died while refreshing; `CoordinatedRefreshProcessTests`
/// kills a real one): the opt-in grace period of servers that accept a rotated-out refresh token
/// for a while, and the operator's two resolutions. The dead process's in-flight record is
/// written here as the engine writes it.
@Suite struct UnknownRefreshOutcomeTests {
    let clock = TestClock()
    let flow = FakeFlow()
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("unknown-\(UUID().uuidString)")

    var store: FileTokenStore { FileTokenStore(directory: folder) }

    /// A stored, expired session, and the record of a process that died `secondsAgo` into
    /// refreshing it.
    func deadRefresh(secondsAgo: TimeInterval) async throws {
        let stale = OAuthToken(
            accessToken: "access-0", expiresAt: clock.now.addingTimeInterval(-1), refreshToken: "refresh-0")
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(stale)
        try await store.save(data, forKey: flow.storeKey)
        let record: [String: Any] = [
            "credential": data.base64EncodedString(),
            "startedAt": clock.now.addingTimeInterval(-secondsAgo).timeIntervalSince1970,
            "holder": "replica-7 worker (pid 4242)",
        ]
        try await store.save(
            try JSONSerialization.data(withJSONObject: record), forKey: flow.storeKey + "#refresh-in-flight")
    }

    func authenticator(grace: TimeInterval? = nil) -> OAuthAuthenticator {
        OAuthAuthenticator(
            flow: flow, store: store, configuration: .init(clock: clock, refreshTokenReuseGracePeriod: grace))
    }

    @Test func withoutAGracePeriodTheOutcomeIsReportedWithWhenAndByWhom() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        try await deadRefresh(secondsAgo: 5)
        let authenticator = authenticator()
        let error = await #expect(throws: AuthenticationError.self) { try await authenticator.validCredential() }
        #expect(error?.code == .refreshOutcomeUnknown)
        #expect(flow.refreshCalls == 0, "the possibly spent token is not sent")
        let outcome = try #require(await authenticator.unknownRefreshOutcome)
        #expect(outcome.holder == "replica-7 worker (pid 4242)")
        #expect(outcome.startedAt == clock.now.addingTimeInterval(-5))
        #expect(error?.message.contains("pid 4242") == true)
    }

    @Test func withinTheServersGracePeriodTheUnrotatedTokenIsRetried() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        try await deadRefresh(secondsAgo: 5)
        let authenticator = authenticator(grace: 30)
        #expect(try await authenticator.validCredential().accessToken == "access-1")
        #expect(flow.state.withLock { $0.refreshedFrom } == ["access-0"], "one refresh, from the stored token")
        #expect(await authenticator.unknownRefreshOutcome == nil)
    }

    @Test func pastTheGracePeriodTheEngineStaysConservative() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        try await deadRefresh(secondsAgo: 45)
        let authenticator = authenticator(grace: 30)
        let error = await #expect(throws: AuthenticationError.self) { try await authenticator.validCredential() }
        #expect(error?.code == .refreshOutcomeUnknown)
        #expect(flow.refreshCalls == 0)
    }

    @Test func theOperatorEitherRetriesOrRequiresSignInForEveryProcess() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        try await deadRefresh(secondsAgo: 5)
        let first = authenticator()
        _ = try? await first.validCredential()
        try await first.resolveUnknownRefreshOutcome(.requireSignIn)
        #expect(try await store.load(forKey: flow.storeKey) == nil, "cleared for every process")
        let another = authenticator()  // another process on the same store
        flow.state.withLock { $0.canObtain = false }
        let error = await #expect(throws: AuthenticationError.self) { try await another.validCredential() }
        #expect(error?.code == .missingCredential)

        try await deadRefresh(secondsAgo: 5)
        let third = authenticator()
        _ = try? await third.validCredential()
        try await third.resolveUnknownRefreshOutcome()  // .retryWithStoredRefreshToken
        #expect(try await third.validCredential().accessToken.hasPrefix("access-"))
        #expect(await third.unknownRefreshOutcome == nil)
    }
}
