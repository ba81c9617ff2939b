import AuthenticatedRequests
import Foundation
import RequestFixtures

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// A flow whose token endpoint answers after `delay` and counts its calls.
final class SlowTokenEndpointFlow: OAuthFlow {
    let storeKey = "benchmark@https://auth.example.com/token"
    let delay: Duration
    private let lock = NSLock()
    private nonisolated(unsafe) var calls = 0
    private nonisolated(unsafe) var finished: ContinuousClock.Instant?

    init(delay: Duration) {
        self.delay = delay
    }

    var refreshCount: Int { lock.withLock { calls } }
    /// When the last refresh returned.
    var finishedAt: ContinuousClock.Instant? { lock.withLock { finished } }

    func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        try await refresh(Fixtures.expiredToken(), for: context)
    }

    func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        lock.withLock { calls += 1 }
        try await Task.sleep(for: delay)
        lock.withLock { finished = .now }
        return Fixtures.validToken()
    }
}

/// Resident memory of this process, in KiB (Linux `/proc/self/statm`; 0 elsewhere).
func residentMemoryKiB() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = statm.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
}

/// Continuations resumed together, as the engine's shared refresh keeps its waiters.
final class Waiters: Sendable {
    private let state = Locked<(done: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if !state.done { state.waiting.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
    }

    func resumeAll() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.done = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
