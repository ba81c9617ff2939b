import AuthenticatedRequests
import Foundation

/// What the user needs to approve a device (RFC 8628 §3.2): show ``userCode`` and
/// ``verificationURI`` (or ``verificationURIComplete``) to the user.
public struct DeviceAuthorization: Sendable, CustomStringConvertible {
    /// `device_code`: the device's secret; never shown in descriptions.
    public let deviceCode: String
    /// `user_code`: the code the user types at the verification page.
    public let userCode: String
    /// `verification_uri`: the page where the user enters the code.
    public let verificationURI: URL
    /// `verification_uri_complete`: the page with the code filled in, if the server offers it.
    public let verificationURIComplete: URL?
    /// When the codes expire, from `expires_in`.
    public let expiresAt: Date
    /// `interval`: seconds between polls; 5 when the server does not say.
    public let interval: TimeInterval

    /// Creates the codes, e.g. to resume polling after a restart.
    public init(
        deviceCode: String,
        userCode: String,
        verificationURI: URL,
        verificationURIComplete: URL?,
        expiresAt: Date,
        interval: TimeInterval
    ) {
        self.deviceCode = deviceCode
        self.userCode = userCode
        self.verificationURI = verificationURI
        self.verificationURIComplete = verificationURIComplete
        self.expiresAt = expiresAt
        self.interval = interval
    }

    /// The user-facing fields; the device code is redacted.
    public var description: String {
        "DeviceAuthorization(userCode: \(userCode), verificationURI: \(verificationURI), expiresAt: \(expiresAt.safeDescription), "
            + "interval: \(interval), deviceCode: \(Redaction.placeholder))"
    }
}

/// The device authorization grant (RFC 8628), for devices without a browser or keyboard.
///
/// ``obtainToken(for:)`` requests the codes, hands them to ``onUserCode`` (show them to the
/// user), then polls the token endpoint every `interval` seconds: it keeps polling on
/// `authorization_pending`, adds 5 seconds on `slow_down`, and stops with an `OAuthError` on
/// `access_denied`, on `expired_token`, or at the `expires_in` deadline (code `expired_token`).
/// Cancelling the task stops the polling. Refreshes use the refresh token grant.
public struct DeviceAuthorizationFlow: OAuthFlow {
    /// `urn:ietf:params:oauth:grant-type:device_code`.
    public static let grantType = "urn:ietf:params:oauth:grant-type:device_code"

    /// Waits between polls; `Task.sleep` unless given (tests pass a clock-advancing one).
    public typealias Sleep = @Sendable (_ seconds: TimeInterval) async throws -> Void

    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// The device authorization endpoint (RFC 8628 §3.1).
    public let deviceAuthorizationEndpoint: URL
    /// `scope`, if any.
    public let scope: String?
    /// Receives the codes to show the user, before polling starts.
    public let onUserCode: @Sendable (DeviceAuthorization) async -> Void
    /// The account the session belongs to, for apps with several; part of ``storeKey``.
    public var account: String?
    private let sleep: Sleep

    /// Creates the flow; `resources` are RFC 8707 resource indicators, sent with every token
    /// request.
    public init(
        deviceAuthorizationEndpoint: URL,
        tokenEndpoint: URL,
        client: ClientAuthentication,
        scope: String? = nil,
        resources: [URL] = [],
        sleep: @escaping Sleep = DeviceAuthorizationFlow.defaultSleep,
        onUserCode: @escaping @Sendable (DeviceAuthorization) async -> Void
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client, resources: resources)
        self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
        self.scope = scope
        self.sleep = sleep
        self.onUserCode = onUserCode
    }

    /// Client, endpoint and account: see ``TokenEndpoint/storeKey(account:)``.
    public var storeKey: String { endpoint.storeKey(account: account) }

    /// Requests codes, reports them, and polls until the user decides.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        let authorization = try await requestAuthorization(context: context)
        await onUserCode(authorization)
        return try await pollToken(for: authorization, context: context)
    }

    /// Refreshes with the refresh token grant.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        try await endpoint.refresh(token, context: context)
    }

    /// Requests a device code and user code (RFC 8628 §3.1, §3.2).
    ///
    /// `expires_in` must be a positive number (at most one day is used); `interval` must be a
    /// number of at least 0 seconds when present (5 when absent, raised to 1 when below).
    public func requestAuthorization(context: AuthenticationContext) async throws -> DeviceAuthorization {
        var parameters: [(String, String)] = []
        if let scope { parameters.append(("scope", scope)) }
        let reply = try await FormPost.send(
            parameters,
            to: deviceAuthorizationEndpoint,
            client: endpoint.client,
            context: context
        )
        return try Self.authorization(from: reply, now: context.clock.now)
    }

    /// Parses a device authorization response (RFC 8628 §3.2) or throws its error.
    package static func authorization(from reply: ServerReply, now: Date) throws -> DeviceAuthorization {
        let fields = try FormPost.jsonObject(from: reply, now: now)
        func missing(_ name: String) -> TokenEndpointError {
            TokenEndpointError(
                .missingField,
                "The device authorization response has no valid \(name).",
                reply: reply,
                field: name
            )
        }
        guard let deviceCode = fields["device_code"]?.stringValue, !deviceCode.isEmpty else {
            throw missing("device_code")
        }
        guard let userCode = fields["user_code"]?.stringValue, !userCode.isEmpty else { throw missing("user_code") }
        guard let verification = (fields["verification_uri"] ?? fields["verification_url"])?.stringValue,
            let verificationURI = URL(string: verification)
        else { throw missing("verification_uri") }
        guard let expiresIn = try ServerNumber.seconds(fields["expires_in"], ServerNumber.deviceCodeLifetime, in: reply)
        else { throw missing("expires_in") }
        let interval = try ServerNumber.seconds(fields["interval"], ServerNumber.pollingInterval, in: reply) ?? 5
        return DeviceAuthorization(
            deviceCode: deviceCode,
            userCode: userCode,
            verificationURI: verificationURI,
            verificationURIComplete: fields["verification_uri_complete"]?.stringValue.flatMap(URL.init(string:)),
            expiresAt: reply.sentAt.addingTimeInterval(expiresIn),
            interval: Swift.max(interval, 1)
        )
    }

    /// Polls the token endpoint (RFC 8628 §3.4, §3.5) until the user approves or denies, the
    /// codes expire, or the task is cancelled.
    ///
    /// It never sleeps past the codes' deadline: the last wait ends at `expiresAt`, and then the
    /// flow stops with `expired_token` without polling again.
    public func pollToken(for authorization: DeviceAuthorization, context: AuthenticationContext) async throws
        -> OAuthToken
    {
        try await TokenPolling.poll(
            every: authorization.interval, until: authorization.expiresAt, clock: context.clock, sleep: sleep,
            expired: Self.expired
        ) {
            try await endpoint.requestToken(
                grantType: Self.grantType,
                parameters: [("device_code", authorization.deviceCode)],
                requestedScope: scope,
                context: context
            )
        }
    }

    /// An interval a caller may have built by hand, made safe to sleep: at least 1 second, and
    /// a finite number.
    static func usableInterval(_ interval: TimeInterval) -> TimeInterval {
        interval.isFinite ? Swift.min(Swift.max(interval, 1), 86_400) : 5
    }

    private static var expired: OAuthError {
        OAuthError(code: .expiredToken, errorDescription: "The device code expired before the user approved it.")
    }

    /// `Task.sleep` for `seconds`, clamped to a range that converts to nanoseconds without trapping.
    public static func defaultSleep(_ seconds: TimeInterval) async throws {
        let clamped = seconds.isFinite ? Swift.min(Swift.max(seconds, 0), 86_400) : 0
        try await Task.sleep(nanoseconds: UInt64(clamped * 1_000_000_000))
    }
}
