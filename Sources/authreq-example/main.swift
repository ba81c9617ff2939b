// A walk through the package against an in-memory authorization server and API:
// a first token, an expiry-triggered refresh, and a retry after a revoked token.
import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Me: AuthenticatedResource {
    struct Profile: Decodable { let name: String }
    typealias Output = Profile
    let authenticator: any RequestAuthenticator
    let transport: any HTTPTransport
    func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(url: URL(string: "https://api.example.com/me")!)
    }
}

/// A flow that issues numbered tokens valid for 5 minutes.
final class DemoFlow: OAuthFlow {
    let storeKey = "demo-client@https://auth.example.com/token"
    let issued = Counter()
    func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        try await refresh(OAuthToken(accessToken: ""), for: context)
    }
    func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        let number = await issued.next()
        return OAuthToken(accessToken: "token-\(number)", expiresAt: context.clock.now.addingTimeInterval(300))
    }
}

actor Counter {
    var value = 0
    func next() -> Int {
        value += 1
        return value
    }
}

final class DemoClock: WallClock, @unchecked Sendable {
    private let lock = NSLock()
    private var offset: TimeInterval = 0
    var now: Date { lock.withLock { Date().addingTimeInterval(offset) } }
    func advance(by seconds: TimeInterval) { lock.withLock { offset += seconds } }
}

actor Revocations {
    var tokens: Set<String> = []
    func revoke(_ token: String) { tokens.insert(token) }
    func contains(_ token: String) -> Bool { tokens.contains(token) }
}

let revocations = Revocations()
let api = InMemoryTransport { request in
    let authorization = request.value(forHTTPHeaderField: "Authorization") ?? ""
    if await revocations.contains(String(authorization.dropFirst("Bearer ".count))) {
        return try InMemoryTransport.reply(
            to: request, status: 401, headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\""])
    }
    return try InMemoryTransport.reply(to: request, json: #"{"name":"Ada"}"#)
}

let clock = DemoClock()
let flow = DemoFlow()
let authenticator = OAuthAuthenticator(flow: flow, configuration: .init(clock: clock))
let events = await authenticator.events()
Task { for await event in events { print("  event: \(event)") } }
let me = Me(authenticator: authenticator, transport: api)

do {
    print("1. First request: the flow obtains a token.")
    print("   hello, \(try await me.request().name)")
    print("2. Ten minutes later the token has expired: it is refreshed before the request.")
    clock.advance(by: 600)
    print("   hello, \(try await me.request().name)")
    print("3. The server revokes the token: the request gets 401, refreshes once, retries once.")
    await revocations.revoke(try await authenticator.currentCredential()?.accessToken ?? "")
    print("   hello, \(try await me.request().name)")
    print("   current token: \(try await authenticator.currentCredential().map { "\($0)" } ?? "none")")
    try await Task.sleep(for: .milliseconds(50))
    print("Done.")
} catch {
    print("Failed: \(error)")
    exit(1)
}
