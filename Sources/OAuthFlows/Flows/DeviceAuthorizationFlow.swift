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
        "DeviceAuthorization(userCode: \(userCode), verificationURI: \(verificationURI), expiresAt: \(expiresAt), "
            + "interval: \(interval), deviceCode: \(Redaction.placeholder))"
    }
}

/// The device authorization grant (RFC 8628), for devices without a browser or keyboard.
///
/// ``obtainToken(for:)`` requests the codes, hands them to ``onUserCode`` (show them to the
/// user), then polls the token endpoint every `interval` seconds: it keeps polling on
/// `authorization_pending`, adds 5 seconds on `slow_down`, and stops with an ``OAuthError`` on
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
    private let sleep: Sleep

    /// Creates the flow.
    public init(
        deviceAuthorizationEndpoint: URL,
        tokenEndpoint: URL,
        client: ClientAuthentication,
        scope: String? = nil,
        sleep: @escaping Sleep = { try await Task.sleep(nanoseconds: UInt64($0 * 1_000_000_000)) },
        onUserCode: @escaping @Sendable (DeviceAuthorization) async -> Void
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client)
        self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
        self.scope = scope
        self.sleep = sleep
        self.onUserCode = onUserCode
    }

    /// Client and endpoint.
    public var storeKey: String { endpoint.storeKey }

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
    public func requestAuthorization(context: AuthenticationContext) async throws -> DeviceAuthorization {
        let issuedAt = context.clock.now
        var parameters: [(String, String)] = []
        if let scope { parameters.append(("scope", scope)) }
        let (body, response) = try await FormPost.send(
            parameters,
            to: deviceAuthorizationEndpoint,
            client: endpoint.client,
            context: context
        )
        let fields = try FormPost.jsonObject(from: body, response: response)
        func missing(_ name: String) -> TokenEndpointError {
            TokenEndpointError(
                .missingField,
                "The device authorization response has no valid \(name).",
                statusCode: response.statusCode,
                body: body
            )
        }
        guard let deviceCode = fields["device_code"]?.stringValue else { throw missing("device_code") }
        guard let userCode = fields["user_code"]?.stringValue else { throw missing("user_code") }
        guard let verification = (fields["verification_uri"] ?? fields["verification_url"])?.stringValue,
            let verificationURI = URL(string: verification)
        else { throw missing("verification_uri") }
        guard let expiresIn = fields["expires_in"]?.doubleValue else { throw missing("expires_in") }
        return DeviceAuthorization(
            deviceCode: deviceCode,
            userCode: userCode,
            verificationURI: verificationURI,
            verificationURIComplete: fields["verification_uri_complete"]?.stringValue.flatMap(URL.init(string:)),
            expiresAt: issuedAt.addingTimeInterval(expiresIn),
            interval: max(fields["interval"]?.doubleValue ?? 5, 1)
        )
    }

    /// Polls the token endpoint (RFC 8628 §3.4, §3.5) until the user approves or denies, the
    /// codes expire, or the task is cancelled.
    public func pollToken(for authorization: DeviceAuthorization, context: AuthenticationContext) async throws
        -> OAuthToken
    {
        var interval = authorization.interval
        while true {
            try await sleep(interval)
            try Task.checkCancellation()
            guard context.clock.now < authorization.expiresAt else {
                throw OAuthError(
                    code: .expiredToken,
                    errorDescription: "The device code expired before the user approved it."
                )
            }
            do {
                return try await endpoint.requestToken(
                    grantType: Self.grantType,
                    parameters: [("device_code", authorization.deviceCode)],
                    requestedScope: scope,
                    context: context
                )
            } catch let error as OAuthError where error.code == .authorizationPending {
                continue
            } catch let error as OAuthError where error.code == .slowDown {
                interval += 5
            }
        }
    }
}
