import AuthenticatedRequests
import Foundation

/// Whom the provider asks (OpenID Connect CIBA Core 1.0 §7.1): exactly one hint.
public enum BackchannelUserHint: Sendable, Hashable {
    /// `login_hint`: an identifier the provider knows the user by (an e-mail address, a phone
    /// number, a user name).
    case loginHint(String)
    /// `id_token_hint`: an ID token the provider issued for the user earlier.
    case idTokenHint(String)
    /// `login_hint_token`: a token about the user the provider accepts (its format is the
    /// provider's). Secret: never in a description.
    case loginHintToken(String)

    /// The hint's value when it is a secret (a token), which replies must not echo.
    var secret: String? {
        switch self {
        case .loginHint: nil
        case .idTokenHint(let token), .loginHintToken(let token): token
        }
    }

    /// The parameter's name and value.
    var parameter: (String, String) {
        switch self {
        case .loginHint(let value): ("login_hint", value)
        case .idTokenHint(let value): ("id_token_hint", value)
        case .loginHintToken(let value): ("login_hint_token", value)
        }
    }
}

/// What the client asks the user to approve (CIBA Core §7.1).
public struct BackchannelAuthenticationRequest: Sendable {
    /// `scope`; CIBA needs `openid` in it, which ``init(hint:scope:bindingMessage:userCode:requestedExpiry:acrValues:authorizationDetails:)``
    /// adds when it is missing.
    public var scope: String
    /// Whom the provider asks.
    public var hint: BackchannelUserHint
    /// `binding_message`: a short text shown on both the client's side and the user's device,
    /// so that the user can tell this request from another ("Pay 120 EUR to ACME, code 4711").
    public var bindingMessage: String?
    /// `user_code`: a secret the user set at the provider, proving the request comes from them.
    public var userCode: String?
    /// `requested_expiry`: how long the client would wait, in seconds.
    public var requestedExpiry: Int?
    /// `acr_values`: the authentication context classes the client asks for, in order of preference.
    public var acrValues: [String]
    /// `authorization_details` (RFC 9396): what exactly the user approves.
    public var authorizationDetails: [AuthorizationDetail]

    /// Creates a request.
    public init(
        hint: BackchannelUserHint,
        scope: String = "openid",
        bindingMessage: String? = nil,
        userCode: String? = nil,
        requestedExpiry: Int? = nil,
        acrValues: [String] = [],
        authorizationDetails: [AuthorizationDetail] = []
    ) {
        let scopes = scope.split(separator: " ").map(String.init)
        self.scope = scopes.contains("openid") ? scope : (["openid"] + scopes).joined(separator: " ")
        self.hint = hint
        self.bindingMessage = bindingMessage
        self.userCode = userCode
        self.requestedExpiry = requestedExpiry
        self.acrValues = acrValues
        self.authorizationDetails = authorizationDetails
    }

    /// The request's parameters as the claims of a signed authentication request (CIBA Core
    /// §7.1.1): `requested_expiry` a number, `authorization_details` a JSON array, the rest strings.
    func claims(clientNotificationToken: String?) throws -> [String: JSONValue] {
        var claims: [String: JSONValue] = [:]
        for (name, value) in try parameters(clientNotificationToken: clientNotificationToken) {
            switch name {
            case "requested_expiry": claims[name] = .number(Double(requestedExpiry ?? 0))
            case "authorization_details": claims[name] = .array(authorizationDetails.map(\.jsonValue))
            default: claims[name] = .string(value)
            }
        }
        return claims
    }

    /// The request's parameters, without the client's credentials.
    func parameters(clientNotificationToken: String?) throws -> [(String, String)] {
        var parameters: [(String, String)] = [("scope", scope), hint.parameter]
        if let bindingMessage { parameters.append(("binding_message", bindingMessage)) }
        if let userCode { parameters.append(("user_code", userCode)) }
        if let requestedExpiry { parameters.append(("requested_expiry", String(requestedExpiry))) }
        if !acrValues.isEmpty { parameters.append(("acr_values", acrValues.joined(separator: " "))) }
        if !authorizationDetails.isEmpty {
            parameters.append(("authorization_details", try AuthorizationDetail.parameter(authorizationDetails)))
        }
        if let clientNotificationToken { parameters.append(("client_notification_token", clientNotificationToken)) }
        return parameters
    }
}

/// The provider's acknowledgement of a backchannel authentication request (CIBA Core §7.3).
public struct BackchannelAuthentication: Sendable, CustomStringConvertible {
    /// `auth_req_id`: the request's identifier, which the client redeems for tokens. Secret:
    /// never in a description.
    public let authRequestID: String
    /// When the request expires, from `expires_in`.
    public let expiresAt: Date
    /// `interval`: seconds between polls; 5 when the provider does not say.
    public let interval: TimeInterval
    /// The request's `binding_message`, to show the user beside the wait.
    public let bindingMessage: String?

    /// Creates an acknowledgement, e.g. to resume waiting after a restart.
    public init(authRequestID: String, expiresAt: Date, interval: TimeInterval, bindingMessage: String?) {
        self.authRequestID = authRequestID
        self.expiresAt = expiresAt
        self.interval = interval
        self.bindingMessage = bindingMessage
    }

    /// Expiry, interval and binding message; the request's identifier is redacted.
    public var description: String {
        "BackchannelAuthentication(expiresAt: \(expiresAt.safeDescription), interval: \(interval), "
            + "bindingMessage: \(bindingMessage.map { "\"\($0)\"" } ?? "nil"), authRequestID: \(Redaction.placeholder))"
    }
}

/// Client-Initiated Backchannel Authentication (OpenID Connect CIBA Core 1.0): the client names
/// a user, the provider asks that user on their own device, and the client gets tokens once they
/// approve, without a browser on the client's side. For agents and services that act for a
/// person who is not at the keyboard.
///
/// ``obtainToken(for:)`` posts the request to the provider's `backchannel_authentication_endpoint`,
/// hands the acknowledgement to ``onRequest`` (show the binding message), then waits:
/// - **poll** (the default): it polls the token endpoint every `interval` seconds, keeps polling on
///   `authorization_pending`, adds 5 seconds for good on `slow_down`, and stops with an
///   `OAuthError` on `access_denied`, `expired_token`, `transaction_failed`, or at the request's
///   expiry (code `expired_token`) without polling after it;
/// - **ping**: it sends a fresh `client_notification_token` and waits for the provider's
///   notification, which the application's HTTP server hands to ``BackchannelNotifications``;
///   then it fetches the tokens once. A notification that never comes ends in one poll at expiry.
///
/// Cancelling the task stops the wait at once. Refreshes use the refresh token grant.
///
/// With an `OAuthAuthenticator` whose store other processes share (a `FileTokenStore`, a
/// `PostgresTokenStore`), the user is asked once for all of them: processes obtain the first token
/// one at a time under the store's lock (``initialTokenLockTimeout``), and those that waited adopt
/// it, or fail with the same `access_denied`. With ``allowsStepUp``, a resource's `403` asking for
/// more (`insufficient_scope`, `insufficient_user_authentication`,
/// `insufficient_authorization_details`) asks the user again, for what it asks.
public struct BackchannelAuthenticationFlow: OAuthFlow {
    /// `urn:openid:params:grant-type:ciba`.
    public static let grantType = "urn:openid:params:grant-type:ciba"

    /// How the client learns that the user decided.
    public enum DeliveryMode: Sendable {
        /// The client polls the token endpoint.
        case poll
        /// The provider notifies the client's endpoint, which hands the notification to
        /// `notifications`; the client then fetches the tokens.
        case ping(BackchannelNotifications)
    }

    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// The provider's `backchannel_authentication_endpoint`.
    public let backchannelAuthenticationEndpoint: URL
    /// What the user is asked.
    public var request: BackchannelAuthenticationRequest
    /// Poll or ping.
    public let deliveryMode: DeliveryMode
    /// Receives the acknowledgement (with the binding message to show) before the wait.
    public let onRequest: @Sendable (BackchannelAuthentication) async -> Void
    /// The account the session belongs to, for apps with several; part of ``storeKey``.
    public var account: String?
    /// Whether a resource's step-up challenge asks the user again (``stepUp(_:to:for:)``);
    /// `false` unless set.
    public var allowsStepUp = false
    /// Signs each authentication request (CIBA Core §7.1.1: the parameters as the claims of a
    /// JWT with `aud` the provider's issuer, sent as `request` beside the client's
    /// authentication), as FAPI-CIBA requires; `nil` sends the parameters as they are.
    public var requestObjectSigning: RequestObjectSigning?

    /// A signer of authentication requests and the provider it signs them for.
    public struct RequestObjectSigning: Sendable {
        /// Signs the request objects, e.g. the client's `PrivateKeyJWT`.
        public let signer: any RequestObjectSigner
        /// Their `aud`: the provider's issuer.
        public let audience: String

        /// Creates the signing.
        public init(signer: any RequestObjectSigner, audience: String) {
            self.signer = signer
            self.audience = audience
        }
    }
    private let sleep: DeviceAuthorizationFlow.Sleep

    /// Creates the flow.
    /// - Parameters:
    ///   - backchannelAuthenticationEndpoint: The provider's `backchannel_authentication_endpoint`.
    ///   - tokenEndpoint: The provider's token endpoint.
    ///   - client: The client's authentication, at both endpoints.
    ///   - request: Whom to ask and what.
    ///   - deliveryMode: `.poll` unless given.
    ///   - sleep: Waits between polls; `Task.sleep` unless given (tests pass a clock-advancing one).
    ///   - onRequest: Receives the provider's acknowledgement before the wait.
    public init(
        backchannelAuthenticationEndpoint: URL,
        tokenEndpoint: URL,
        client: ClientAuthentication,
        request: BackchannelAuthenticationRequest,
        deliveryMode: DeliveryMode = .poll,
        sleep: @escaping DeviceAuthorizationFlow.Sleep = DeviceAuthorizationFlow.defaultSleep,
        onRequest: @escaping @Sendable (BackchannelAuthentication) async -> Void = { _ in }
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client)
        self.backchannelAuthenticationEndpoint = backchannelAuthenticationEndpoint
        self.request = request
        self.deliveryMode = deliveryMode
        self.sleep = sleep
        self.onRequest = onRequest
    }

    /// Client, endpoint and account: see ``TokenEndpoint/storeKey(account:)``.
    public var storeKey: String { endpoint.storeKey(account: account) }

    /// Asks the user through the provider and waits for their decision.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        switch deliveryMode {
        case .poll:
            let authentication = try await startAuthentication(clientNotificationToken: nil, context: context)
            await onRequest(authentication)
            return try await pollToken(for: authentication, context: context)
        case .ping(let notifications):
            let notificationToken = BackchannelNotifications.newToken()
            let authentication = try await startAuthentication(
                clientNotificationToken: notificationToken, context: context)
            let notified = await notifications.expect(authentication.authRequestID, bearer: notificationToken)
            defer { Task { await notifications.forget(authentication.authRequestID) } }
            await onRequest(authentication)
            let remaining = authentication.expiresAt.timeIntervalSince(context.clock.now)
            // Until the notification comes, or once at expiry: a notification that never comes
            // ends in one poll.
            _ = try await notified.wait(upTo: Swift.max(remaining, 0), sleep: sleep)
            return try await fetchToken(for: authentication, context: context)
        }
    }

    /// Refreshes with the refresh token grant.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        try await endpoint.refresh(token, context: context)
    }

    /// How long another process sharing the store waits while this one asks the user: the
    /// request's `requested_expiry` (10 minutes when it has none) and one minute more.
    public var initialTokenLockTimeout: TimeInterval? { TimeInterval(request.requestedExpiry ?? 600) + 60 }

    /// ``allowsStepUp``.
    public var canStepUp: Bool { allowsStepUp }

    /// The request a step-up sends: the same user (the session's ID token as `id_token_hint`
    /// when the token has one, else the original hint), the union of the granted and required
    /// scopes, the `acr_values` and authorization details the resource asked for, and the
    /// original binding message.
    public func stepUpRequest(for token: OAuthToken, to requirement: StepUpRequirement)
        -> BackchannelAuthenticationRequest
    {
        let granted = [request.scope, token.scope].compactMap { $0 }.joined(separator: " ")
        return BackchannelAuthenticationRequest(
            hint: token.idToken.map(BackchannelUserHint.idTokenHint) ?? request.hint,
            scope: requirement.scope(addedTo: granted) ?? request.scope,
            bindingMessage: request.bindingMessage,
            requestedExpiry: request.requestedExpiry,
            acrValues: requirement.acrValues.isEmpty ? request.acrValues : requirement.acrValues,
            authorizationDetails: requirement.authorizationDetails.isEmpty
                ? request.authorizationDetails : requirement.authorizationDetails)
    }

    /// Asks the user again for what `requirement` asks (``stepUpRequest(for:to:)``), in the
    /// flow's delivery mode, and waits as ``obtainToken(for:)`` does.
    ///
    /// - Throws: `StepUpError` `.unsupported` unless ``allowsStepUp``; the provider's refusal as
    ///   an `OAuthError`.
    public func stepUp(_ token: OAuthToken, to requirement: StepUpRequirement, for context: AuthenticationContext)
        async throws -> OAuthToken
    {
        guard allowsStepUp else { throw StepUpError(.unsupported, requirement: requirement) }
        var again = self
        again.request = stepUpRequest(for: token, to: requirement)
        return try await again.obtainToken(for: context)
    }

    /// Posts the backchannel authentication request (CIBA Core §7.1), signed when
    /// ``requestObjectSigning`` is set (§7.1.1), and reads the acknowledgement (§7.3), or throws
    /// the provider's error (§13).
    public func startAuthentication(
        clientNotificationToken: String?, context: AuthenticationContext
    ) async throws -> BackchannelAuthentication {
        var parameters = try request.parameters(clientNotificationToken: clientNotificationToken)
        var secrets = [clientNotificationToken, request.userCode, request.hint.secret].compactMap { $0 }
        if let signing = requestObjectSigning {
            let object = try await signing.signer.requestObject(
                clientID: endpoint.client.clientID, audience: signing.audience,
                parameters: try request.claims(clientNotificationToken: clientNotificationToken))
            parameters = [("request", object)]
            secrets.append(object)
        }
        let reply = try await FormPost.send(
            parameters,
            to: backchannelAuthenticationEndpoint,
            client: endpoint.client,
            context: context,
            alsoRemoving: secrets
        )
        return try Self.authentication(from: reply, bindingMessage: request.bindingMessage)
    }

    /// Parses a backchannel authentication response (CIBA Core §7.3) or throws its error.
    ///
    /// `auth_req_id` must be a non-empty string of at most 1,024 characters; `expires_in` a
    /// positive number (at most one day is used); `interval`, when present, a number of at least 0
    /// seconds (5 when absent, raised to 1 when below).
    package static func authentication(from reply: ServerReply, bindingMessage: String?) throws
        -> BackchannelAuthentication
    {
        let fields = try FormPost.jsonObject(from: reply, now: reply.sentAt)
        func missing(_ name: String) -> TokenEndpointError {
            TokenEndpointError(
                .missingField, "The backchannel authentication response has no valid \(name).", reply: reply,
                field: name)
        }
        guard let id = fields["auth_req_id"]?.stringValue, !id.isEmpty, id.utf8.count <= 1024 else {
            throw missing("auth_req_id")
        }
        guard let expiresIn = try ServerNumber.seconds(fields["expires_in"], ServerNumber.deviceCodeLifetime, in: reply)
        else { throw missing("expires_in") }
        let interval = try ServerNumber.seconds(fields["interval"], ServerNumber.pollingInterval, in: reply) ?? 5
        return BackchannelAuthentication(
            authRequestID: id,
            expiresAt: reply.sentAt.addingTimeInterval(expiresIn),
            interval: Swift.max(interval, 1),
            bindingMessage: bindingMessage)
    }

    /// Polls the token endpoint (CIBA Core §7.4, §11) until the user approves or denies, the
    /// request expires, or the task is cancelled; never after the request's expiry.
    public func pollToken(for authentication: BackchannelAuthentication, context: AuthenticationContext)
        async throws -> OAuthToken
    {
        try await TokenPolling.poll(
            every: authentication.interval, until: authentication.expiresAt, clock: context.clock, sleep: sleep,
            expired: Self.expired
        ) {
            try await fetchToken(for: authentication, context: context)
        }
    }

    /// Redeems the request's identifier at the token endpoint once (CIBA Core §10.1).
    public func fetchToken(for authentication: BackchannelAuthentication, context: AuthenticationContext)
        async throws -> OAuthToken
    {
        try await endpoint.requestToken(
            grantType: Self.grantType,
            parameters: [("auth_req_id", authentication.authRequestID)],
            requestedScope: request.scope,
            context: context)
    }

    private static var expired: OAuthError {
        OAuthError(
            code: .expiredToken,
            errorDescription: "The backchannel authentication request expired before the user approved it.")
    }
}
