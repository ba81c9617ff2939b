import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#endif

struct Profile: Decodable, Sendable {
    let name: String
}

/// The same endpoint, without authentication.
struct PlainMe: Resource {
    typealias Output = Profile
    let transport: any HTTPTransport
    let url: URL
    func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
}

/// The same endpoint, through an authenticator.
struct AuthenticatedMe: AuthenticatedResource {
    typealias Output = Profile
    let authenticator: any RequestAuthenticator
    let transport: any HTTPTransport
    let url: URL
    func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
}

enum Fixtures {
    static let apiURL = URL(string: "https://api.example.com/me")!
    static let body = Data(#"{"name":"Ada"}"#.utf8)
    static let response = HTTPURLResponse(
        url: apiURL,
        statusCode: 200,
        httpVersion: "HTTP/1.1",
        headerFields: ["Content-Type": "application/json"]
    )!

    /// Answers every request with one prebuilt reply: the transport costs the same in both
    /// overhead benchmarks, so their difference is the authentication layer.
    static let inMemoryAPI = InMemoryTransport { _ in (body, response) }

    static func validToken() -> OAuthToken {
        OAuthToken(
            accessToken: "benchmark-access-token", expiresAt: Date().addingTimeInterval(86_400), refreshToken: "rt")
    }

    static func expiredToken() -> OAuthToken {
        OAuthToken(accessToken: "expired-access-token", expiresAt: Date().addingTimeInterval(-10), refreshToken: "rt")
    }
}

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

/// A value behind a lock, for benchmark bookkeeping.
final class Locked<Value: Sendable>: @unchecked Sendable {
    // Sound: `value` is only touched inside `withLock`, under `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
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
