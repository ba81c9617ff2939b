import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An authorization server in memory: records every request and answers with the next queued
/// reply (or a default), so tests can assert the exact form body and headers sent.
package final class TokenServer: Sendable {
    package struct Recorded: Sendable {
        package let request: URLRequest
        package var body: String { String(decoding: request.httpBody ?? Data(), as: UTF8.self) }
        package var form: [String: String] { TokenServer.decodeForm(body) }
        package var formNames: [String] { TokenServer.decodeFormPairs(body).map(\.0) }
        package func header(_ name: String) -> String? { request.value(forHTTPHeaderField: name) }
    }

    package struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data
        var failure: URLError?
    }

    private let state = Locked<(recorded: [Recorded], replies: [Reply])>(([], []))
    private let clock: TestClock?
    private let advanceOnRequest: TimeInterval

    /// - Parameter advanceOnRequest: seconds the test clock moves while each request is "in flight".
    package init(clock: TestClock? = nil, advanceOnRequest: TimeInterval = 0) {
        self.clock = clock
        self.advanceOnRequest = advanceOnRequest
    }

    package var requests: [Recorded] { state.withLock { $0.recorded } }

    package func reply(
        status: Int = 200, headers: [String: String] = ["Content-Type": "application/json"], json: String
    ) {
        reply(status: status, headers: headers, body: Data(json.utf8))
    }

    package func reply(status: Int = 200, headers: [String: String] = [:], body: Data) {
        state.withLock { $0.replies.append(Reply(status: status, headers: headers, body: body)) }
    }

    package func fail(_ error: URLError) {
        state.withLock { $0.replies.append(Reply(status: 0, headers: [:], body: Data(), failure: error)) }
    }

    package var transport: InMemoryTransport {
        InMemoryTransport { [self] request in
            let reply = state.withLock { s -> Reply? in
                s.recorded.append(Recorded(request: request))
                return s.replies.isEmpty ? nil : s.replies.removeFirst()
            }
            clock?.advance(by: advanceOnRequest)
            guard let reply else {
                return try InMemoryTransport.reply(to: request, status: 500, json: #"{"note":"no reply queued"}"#)
            }
            if let failure = reply.failure { throw failure }
            return try InMemoryTransport.reply(
                to: request, status: reply.status, headers: reply.headers, body: reply.body)
        }
    }

    package func context(clock: TestClock) -> AuthenticationContext {
        AuthenticationContext(transport: transport, clock: clock)
    }

    package static func decodeFormPairs(_ body: String) -> [(String, String)] {
        body.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }

    package static func decodeForm(_ body: String) -> [String: String] {
        Dictionary(decodeFormPairs(body), uniquingKeysWith: { first, _ in first })
    }
}
