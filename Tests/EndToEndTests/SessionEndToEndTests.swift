import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

private typealias Server = TestAuthorizationServer

/// Issue 12 against the real Authlib server, with refresh token rotation and reuse detection
/// (a rotated-out refresh token revokes the whole grant): sessions that survive a relaunch, and
/// real processes that share one `FileTokenStore` entry.
@Suite(.enabled(if: Server.isConfigured, Server.notRunReason))
struct SessionEndToEndTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ar-e2e-\(UUID().uuidString)")

    var store: FileTokenStore { FileTokenStore(directory: folder) }

    /// The helper process: restores the session and sends `count` concurrent requests to /api/me.
    func requestsInAnotherProcess(
        _ client: TestAuthorizationServer.Client,
        count: Int,
        crashAt: String? = nil
    ) async throws -> TestHelperProcess.Outcome {
        var arguments = [
            "requests", folder.path, try Server.tokenEndpoint.absoluteString, client.id,
            try Server.base.appendingPathComponent("api/me").absoluteString, "\(count)",
        ]
        if let secret = client.secret { arguments.append(secret) }
        return try await TestHelperProcess.run(
            arguments, environment: crashAt.map { ["AUTHREQ_HELPER_CRASH_AT": $0] } ?? [:])
    }

    func signInWithTheBrowser(_ client: TestAuthorizationServer.Client) async throws {
        let authenticator = OAuthAuthenticator(store: store)
        _ = try await Server.signIn(client, into: authenticator)
    }

    /// Makes the stored access token look expired, as time would: tokens here live 60 s, so that
    /// a busy machine never sees a fresh token expire in the middle of a test.
    func expireStoredSession(_ client: TestAuthorizationServer.Client) async throws {
        let key = StoredSessionFlow(tokenEndpoint: try Server.tokenEndpoint, client: client.publicClient).storeKey
        var token = try JSONDecoder().decode(OAuthToken.self, from: try #require(try await store.load(forKey: key)))
        token.expiresAt = Date().addingTimeInterval(-1)
        token.issuedAt = Date().addingTimeInterval(-61)
        try await store.save(try JSONEncoder().encode(token), forKey: key)
    }

    @Test func aBrowserSignInComesBackInANewProcessAndRefreshesOnceAfterExpiry() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = try await Server.makeClient(public: true, reuseDetection: true, accessTokenLifetime: 60)
        try await signInWithTheBrowser(client)
        let fresh = try await requestsInAnotherProcess(client, count: 5)
        #expect(fresh.json?["successes"] as? Int == 5, "\(fresh.output)")
        #expect(try await Server.tokenRequests(client)["refresh_token"] == nil, "0 token requests while valid")
        try await expireStoredSession(client)
        let later = try await requestsInAnotherProcess(client, count: 5)
        #expect(later.json?["successes"] as? Int == 5, "\(later.output)")
        #expect(try await Server.tokenRequests(client)["refresh_token"] == 1, "exactly one refresh")
    }

    @Test func aDeviceSignInComesBackInANewProcess() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = try await Server.makeClient(accessTokenLifetime: 60)
        let flow = try await Server.metadata().deviceAuthorizationFlow(client: client.post, scope: "profile") {
            try? await Server.decideDevice(userCode: $0.userCode, approve: true)
        }
        let authenticator = OAuthAuthenticator(flow: flow, store: store)
        _ = try await authenticator.validCredential()
        let restored = try await requestsInAnotherProcess(client, count: 5)
        #expect(restored.json?["successes"] as? Int == 5, "\(restored.output)")
        let counts = try await Server.tokenRequests(client)
        #expect(counts[DeviceAuthorizationFlow.grantType] == 1)
        #expect(counts["refresh_token"] == nil)
    }

    @Test func fourProcessesOfFiftyRequestsOnOneExpiredGrantRefreshOnce() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = try await Server.makeClient(public: true, reuseDetection: true, accessTokenLifetime: 60)
        try await signInWithTheBrowser(client)
        try await expireStoredSession(client)
        let outcomes = try await withThrowingTaskGroup(of: TestHelperProcess.Outcome.self) { group in
            for _ in 0..<4 { group.addTask { try await requestsInAnotherProcess(client, count: 50) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let successes = outcomes.compactMap { $0.json?["successes"] as? Int }.reduce(0, +)
        #expect(successes == 200, "\(outcomes.map(\.output))")
        let counts = try await Server.tokenRequests(client)
        #expect(counts["refresh_token"] == 1, "exactly one token request: \(counts)")
        #expect(counts["invalid_grant"] == nil)
        #expect(counts["reuse_detected"] == nil)
    }

    @Test(arguments: ["before-request", "after-send", "after-response", "during-write"])
    func aProcessKilledInItsRefreshNeverSignsTheOthersOut(crashAt: String) async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = try await Server.makeClient(public: true, reuseDetection: true, accessTokenLifetime: 60)
        try await signInWithTheBrowser(client)
        try await expireStoredSession(client)
        let killed = try await requestsInAnotherProcess(client, count: 5, crashAt: crashAt)
        #expect(killed.wasKilled, "\(killed.output)")
        let key = StoredSessionFlow(tokenEndpoint: try Server.tokenEndpoint, client: client.publicClient).storeKey
        let lock = open(store.lockFileURL(forKey: key).path, O_RDWR)
        #expect(flock(lock, LOCK_EX | LOCK_NB) == 0, "the lock is free at once")
        flock(lock, LOCK_UN)
        close(lock)

        try await Server.expectNoSignOutAfterACrash(
            next: try await requestsInAnotherProcess(client, count: 20), client: client)
        #expect(try await store.load(forKey: key) != nil, "never a silent sign-out")
    }
}
