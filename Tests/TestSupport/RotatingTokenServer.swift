import AuthenticatedRequests
import Foundation

/// A token endpoint and an API on 127.0.0.1 that rotate refresh tokens and detect reuse, as Auth0,
/// Okta and Keycloak do: a rotated-out refresh token gets `invalid_grant` and revokes every token
/// of the grant. For tests with several real processes; counts what it saw.
package final class RotatingTokenServer: Sendable {
    package struct State: Sendable {
        package var currentRefreshToken = "rt-0"
        package var validAccessTokens: Set<String> = []
        package var issued = 0
        package var refreshRequests: [String] = []
        package var invalidGrants = 0
        package var familyRevoked = false
    }

    package let state = Locked(State())
    private let server: LoopbackHTTPServer

    package var tokenEndpoint: URL { server.baseURL.appendingPathComponent("token") }
    package var api: URL { server.baseURL.appendingPathComponent("api") }

    /// - Parameter delay: how long each token request takes, so that processes pile up behind it.
    package init(delay: TimeInterval = 0.2, lifetime: Int = 3600) async throws {
        let state = self.state
        server = try await LoopbackHTTPServer { request in
            if request.uri.hasPrefix("/api") {
                let bearer = request.header("Authorization")?.replacingOccurrences(of: "Bearer ", with: "") ?? ""
                let ok = state.withLock { $0.validAccessTokens.contains(bearer) }
                return ok ? .init(body: #"{"ok":true}"#) : .init(status: 401, headers: [("WWW-Authenticate", "Bearer")])
            }
            Thread.sleep(forTimeInterval: delay)
            let form = TokenServer.decodeForm(String(decoding: request.body, as: UTF8.self))
            let presented = form["refresh_token"] ?? ""
            let reply = state.withLock { state -> LoopbackHTTPServer.Reply in
                state.refreshRequests.append(presented)
                guard presented == state.currentRefreshToken, !state.familyRevoked else {
                    state.invalidGrants += 1
                    state.familyRevoked = true  // reuse detection: the whole grant is dead
                    state.validAccessTokens = []
                    return .init(
                        status: 400, headers: [("Content-Type", "application/json")],
                        body: #"{"error":"invalid_grant"}"#)
                }
                state.issued += 1
                let access = "at-\(state.issued)"
                state.currentRefreshToken = "rt-\(state.issued)"
                state.validAccessTokens = [access]
                return .init(
                    headers: [("Content-Type", "application/json")],
                    body: #"{"access_token":"\#(access)","token_type":"Bearer","expires_in":\#(lifetime),"#
                        + #""refresh_token":"\#(state.currentRefreshToken)"}"#
                )
            }
            return reply
        }
    }

    package func shutdown() async throws { try await server.shutdown() }
}
