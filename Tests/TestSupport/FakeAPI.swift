import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A resource server in memory: accepts the bearer tokens in `valid`, answers 401 with a
/// Bearer challenge otherwise, and records every Authorization header it saw.
package final class FakeAPI: Sendable {
    package struct State: Sendable {
        var valid: Set<String> = []
        var seen: [String?] = []
        var alwaysUnauthorized = false
        var holdFirst: Gate?
        var holdEntered = false
    }

    package let state = Locked(State())

    package init(valid: Set<String> = ["access-1"]) {
        state.withLock { $0.valid = valid }
    }

    package var seenAuthorizations: [String?] { state.withLock { $0.seen } }
    package var requestCount: Int { state.withLock { $0.seen.count } }
    package var holdEntered: Bool { state.withLock { $0.holdEntered } }

    package func accept(_ tokens: Set<String>) { state.withLock { $0.valid = tokens } }
    package func rejectEverything() { state.withLock { $0.alwaysUnauthorized = true } }
    /// Holds the next request inside the server until `gate` opens.
    package func holdNextRequest(at gate: Gate) { state.withLock { $0.holdFirst = gate } }

    package var transport: InMemoryTransport {
        InMemoryTransport { [self] request in
            let authorization = request.value(forHTTPHeaderField: "Authorization")
            let gate = state.withLock { s -> Gate? in
                s.seen.append(authorization)
                defer { s.holdFirst = nil }
                if s.holdFirst != nil { s.holdEntered = true }
                return s.holdFirst
            }
            if let gate { await gate.wait() }
            let accepted = state.withLock { s in
                !s.alwaysUnauthorized
                    && authorization.map { $0.hasPrefix("Bearer ") && s.valid.contains(String($0.dropFirst(7))) }
                        ?? false
            }
            if accepted {
                return try InMemoryTransport.reply(to: request, json: #"{"name":"Ada"}"#)
            }
            return try InMemoryTransport.reply(
                to: request,
                status: 401,
                headers: ["WWW-Authenticate": #"Bearer realm="api", error="invalid_token""#],
                json: #"{"error":"invalid_token"}"#
            )
        }
    }
}

package struct Profile: Decodable, Equatable, Sendable {
    package let name: String
}

/// `GET https://api.example.com/me` through an authenticator.
package struct Me: AuthenticatedResource {
    package typealias Output = Profile
    package let authenticator: any RequestAuthenticator
    package let transport: any HTTPTransport
    package var url: URL

    package init(
        authenticator: any RequestAuthenticator,
        transport: any HTTPTransport,
        url: URL = URL(string: "https://api.example.com/me")!
    ) {
        self.authenticator = authenticator
        self.transport = transport
        self.url = url
    }

    package func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(url: url)
    }
}
