import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 12: processes that share a `FileTokenStore` entry refresh at most once per expiry, and a
/// process killed in the middle of its refresh never makes the others sign out or spend a
/// rotated-out refresh token. Real processes (the test helper) against a server that rotates
/// refresh tokens with reuse detection.
@Suite(.serialized) struct CoordinatedRefreshProcessTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ar-processes-\(UUID().uuidString)")

    /// Stores an expired session (access token `at-0`, refresh token `rt-0`) for client `c`.
    func storeExpiredSession(at server: RotatingTokenServer) async throws -> FileTokenStore {
        let store = FileTokenStore(directory: folder)
        let token = OAuthToken(
            accessToken: "at-0", expiresAt: Date().addingTimeInterval(-60), refreshToken: "rt-0",
            issuedAt: Date().addingTimeInterval(-3660))
        try await store.save(
            try JSONEncoder().encode(token),
            forKey: StoredSessionFlow(tokenEndpoint: server.tokenEndpoint, client: .none(id: "c")).storeKey)
        return store
    }

    func runHelper(_ server: RotatingTokenServer, count: Int, crashAt: String? = nil) async throws
        -> TestHelperProcess.Outcome
    {
        try await TestHelperProcess.run(
            ["requests", folder.path, server.tokenEndpoint.absoluteString, "c", server.api.absoluteString, "\(count)"],
            environment: crashAt.map { ["AUTHREQ_HELPER_CRASH_AT": $0] } ?? [:]
        )
    }

    func storedRefreshToken(_ store: FileTokenStore, _ server: RotatingTokenServer) async throws -> String? {
        let key = StoredSessionFlow(tokenEndpoint: server.tokenEndpoint, client: .none(id: "c")).storeKey
        return try await store.load(forKey: key).map { try JSONDecoder().decode(OAuthToken.self, from: $0) }?
            .refreshToken
    }

    @Test func fourProcessesOfFiftyRequestsShareOneRefresh() async throws {
        let server = try await RotatingTokenServer()
        defer { Task { try await server.shutdown() } }
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await storeExpiredSession(at: server)
        let outcomes = try await withThrowingTaskGroup(of: TestHelperProcess.Outcome.self) { group in
            for _ in 0..<4 { group.addTask { try await runHelper(server, count: 50) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let successes = outcomes.compactMap { $0.json?["successes"] as? Int }.reduce(0, +)
        #expect(successes == 200, "\(outcomes.map(\.output))")
        let state = server.state.withLock { $0 }
        #expect(state.refreshRequests == ["rt-0"], "exactly one token request")
        #expect(state.invalidGrants == 0)
        #expect(try await storedRefreshToken(store, server) == "rt-1", "the rotated token is stored")
    }

    @Test(arguments: ["before-request", "after-send", "after-response", "during-write"])
    func aProcessKilledDuringItsRefreshLeavesAWorkingGrantOrATypedError(crashAt: String) async throws {
        let server = try await RotatingTokenServer(delay: 0.05)
        defer { Task { try await server.shutdown() } }
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await storeExpiredSession(at: server)
        let killed = try await runHelper(server, count: 5, crashAt: crashAt)
        #expect(killed.wasKilled, "the helper died at \(crashAt): \(killed.output)")

        // The lock died with its holder.
        let lock = open(store.lockFileURL(forKey: "c@\(server.tokenEndpoint.absoluteString)").path, O_RDWR)
        #expect(lock >= 0)
        #expect(flock(lock, LOCK_EX | LOCK_NB) == 0, "the lock is free at once")
        flock(lock, LOCK_UN)
        close(lock)

        let next = try await runHelper(server, count: 20)
        let successes = next.json?["successes"] as? Int ?? -1
        let errors = next.json?["errors"] as? [String: Int] ?? [:]
        let state = server.state.withLock { $0 }
        // Never a silent sign-out: the session is still stored.
        #expect(try await storedRefreshToken(store, server) != nil)
        // No refresh token older than the newest was ever sent; reuse detection never fired.
        #expect(state.invalidGrants == 0, "\(state.refreshRequests)")
        #expect(state.refreshRequests.allSatisfy { $0 == "rt-0" })
        // Either it works, or every request says the outcome is unknown.
        #expect(successes == 20 || errors == ["refresh outcome unknown": 20], "\(next.output)")
        if crashAt != "before-request" {
            #expect(state.refreshRequests == ["rt-0"], "the dead process's refresh reached the server once")
        }
    }

    @Test func resolvingAnUnknownOutcomeRefreshesAgainForServersWithoutRotation() async throws {
        let server = try await RotatingTokenServer(delay: 0.01)
        defer { Task { try await server.shutdown() } }
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await storeExpiredSession(at: server)
        _ = try await runHelper(server, count: 1, crashAt: "before-request")
        let authenticator = try #require(
            try await OAuthAuthenticator.restore(
                tokenEndpoint: server.tokenEndpoint, client: .none(id: "c"), store: store))
        let states = await authenticator.sessionStates()
        let error = await #expect(throws: AuthenticationError.self) { try await authenticator.validCredential() }
        #expect(error?.code == .refreshOutcomeUnknown)
        var seen: [SessionState] = []
        for await state in states {
            seen.append(state)
            if state == .refreshOutcomeUnknown { break }
        }
        #expect(seen == [.signedIn, .refreshOutcomeUnknown])
        // When and by whom: the dead helper process, in the state and in the error.
        let outcome = try #require(await authenticator.unknownRefreshOutcome)
        #expect(outcome.holder?.contains("pid") == true, "\(outcome)")
        #expect(outcome.holder?.contains("\(ProcessInfo.processInfo.processIdentifier)") == false, "another process")
        #expect(outcome.startedAt.map { abs($0.timeIntervalSinceNow) < 600 } == true)
        #expect((error?.underlyingError as? UnknownRefreshOutcome) == outcome)
        #expect(error?.message.contains("pid") == true)
        try await authenticator.resolveUnknownRefreshOutcome()
        #expect(await authenticator.unknownRefreshOutcome == nil)
        #expect(try await authenticator.validCredential().accessToken == "at-1")
        #expect(try await storedRefreshToken(store, server) == "rt-1")
    }
}
