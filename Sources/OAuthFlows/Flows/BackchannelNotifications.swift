import AuthenticatedRequests
import Foundation

/// The client notification endpoint of CIBA's ping mode (CIBA Core §10.2), for the application
/// to mount on its own HTTP server: one instance per process, shared by every
/// ``BackchannelAuthenticationFlow`` in ping mode.
///
/// Hand each `POST` the provider sends to ``handle(authorization:body:)`` and answer with the
/// status it returns:
///
/// ```swift
/// router.post("/ciba/notify") { request, context in
///     let body = try await request.body.collect(upTo: 8192)
///     let outcome = await notifications.handle(
///         authorization: request.headers[.authorization], body: Data(buffer: body))
///     return Response(status: .init(code: outcome.statusCode))
/// }
/// ```
///
/// A notification is accepted only with the bearer token the flow sent with that very request
/// (`client_notification_token`, compared in constant time) and a known `auth_req_id`; the flow
/// then fetches the tokens. Nothing about a refused notification says which check failed.
public actor BackchannelNotifications {
    /// What ``handle(authorization:body:)`` decided.
    public struct Outcome: Sendable, Hashable {
        /// The HTTP status to answer with: 204 accepted, 401 refused, 400 not a notification.
        public let statusCode: Int
        /// Whether the notification was accepted.
        public var isAccepted: Bool { statusCode == 204 }
    }

    private struct Pending {
        let bearer: String
        let signal: BackchannelSignal
    }

    private var pending: [String: Pending] = [:]

    /// Creates an endpoint with no request pending.
    public init() {}

    /// Decides on a notification: `authorization` is the request's `Authorization` header, `body`
    /// its body (`{"auth_req_id": "…"}`, at most 8 KiB read).
    public func handle(authorization: String?, body: Data) -> Outcome {
        let outcome = Self.decide(authorization: authorization, body: body, expecting: pending.mapValues(\.bearer))
        if outcome.isAccepted, let id = Self.requestID(in: body) { pending[id]?.signal.fire() }
        return outcome
    }

    /// The decision on a notification, given the bearer each pending request expects: 400
    /// unless the body names an `auth_req_id`; 401 unless that request is pending and the bearer
    /// is its own (compared in constant time); 204 otherwise.
    package static func decide(authorization: String?, body: Data, expecting bearers: [String: String]) -> Outcome {
        guard let id = requestID(in: body) else { return Outcome(statusCode: 400) }
        guard let bearer = bearer(in: authorization), let expected = bearers[id], constantTimeEqual(bearer, expected)
        else { return Outcome(statusCode: 401) }
        return Outcome(statusCode: 204)
    }

    /// The `auth_req_id` of a notification's body: a JSON object of at most 8 KiB.
    static func requestID(in body: Data) -> String? {
        guard body.count <= 8192, case .object(let fields)? = try? JSONValue(parsing: body, maximumDepth: 4),
            let id = fields["auth_req_id"]?.stringValue, !id.isEmpty
        else { return nil }
        return id
    }

    /// The token of `Authorization: Bearer <token>`, the scheme in any case.
    static func bearer(in header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// Registers a request whose notification carries `bearer`; returns what fires on it.
    func expect(_ id: String, bearer: String) -> BackchannelSignal {
        let signal = BackchannelSignal()
        pending[id] = Pending(bearer: bearer, signal: signal)
        return signal
    }

    /// Forgets a request that ended.
    func forget(_ id: String) {
        pending[id] = nil
    }

    /// A fresh `client_notification_token`: 256 bits from the system's random generator,
    /// base64url.
    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<4).flatMap { _ in withUnsafeBytes(of: generator.next() as UInt64) { Array($0) } }
        return Data(bytes).base64URLEncodedString()
    }
}

/// Fires once, when a request's notification is accepted.
final class BackchannelSignal: Sendable {
    private let fired = OneShot<Void>()

    func fire() { fired.finish(with: .success(())) }

    /// Returns `true` once fired, `false` after `seconds` (slept with `sleep`) without it.
    func wait(upTo seconds: TimeInterval, sleep: @escaping DeviceAuthorizationFlow.Sleep) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask { [fired] in
                try await fired.value()
                return true
            }
            group.addTask {
                try await sleep(seconds)
                return false
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { return false }
            return first
        }
    }
}
