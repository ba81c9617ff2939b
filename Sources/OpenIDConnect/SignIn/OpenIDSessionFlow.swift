import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

/// The flow of a session signed in with OpenID Connect: it refreshes with the refresh token
/// grant, validates a refreshed ID token against the session's (Core §12.2), and keeps the
/// session's ID token when the refresh response has none, so the claims stay with the
/// credential in the store.
public struct OpenIDSessionFlow: OAuthFlow, CustomStringConvertible {
    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// The account the session belongs to.
    public let account: String?
    /// Validates refreshed ID tokens.
    public let validator: IDTokenValidator

    /// Creates the flow.
    ///
    /// - Parameters:
    ///   - tokenEndpoint: The provider's token endpoint.
    ///   - client: The client and how it authenticates.
    ///   - account: The account the session belongs to, for apps with several.
    ///   - validator: Validates refreshed ID tokens.
    ///   - resources: RFC 8707 resource indicators sent with every refresh (those the session was
    ///     signed in for).
    public init(
        tokenEndpoint: URL, client: ClientAuthentication, account: String? = nil, validator: IDTokenValidator,
        resources: [URL] = []
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client, resources: resources)
        self.account = account
        self.validator = validator
    }

    /// The key every user-delegated flow of this client uses (`TokenEndpoint.storeKey(account:)`).
    public var storeKey: String { endpoint.storeKey(account: account) }

    /// How the session signs in again when a resource asks for a step-up; `nil` when it cannot.
    var stepUpSignIn: StepUpSignIn?

    /// What a step-up's new sign-in needs besides the token endpoint.
    struct StepUpSignIn: Sendable {
        let metadata: AuthorizationServerMetadata
        let redirectURI: URL
        let scope: String
        let userAgent: any AuthorizationUserAgent
        let pushesAuthorizationRequests: Bool
    }

    /// How the user is asked when there is no session, and at a step-up: CIBA, for a flow made by
    /// ``OpenIDClient/backchannelSessionFlow(request:deliveryMode:account:resources:allowsStepUp:requestObjectSigner:onRequest:)``.
    var backchannel: BackchannelAuthenticationFlow?

    /// Whether the session can sign in again for a step-up: when it was signed in with
    /// `OpenIDClient.signIn(…allowsStepUp: true…)`, or asks through CIBA with `allowsStepUp`.
    public var canStepUp: Bool { stepUpSignIn != nil || backchannel?.allowsStepUp == true }

    /// With CIBA, processes sharing the store ask the user once
    /// (`BackchannelAuthenticationFlow.initialTokenLockTimeout`); `nil` otherwise.
    public var initialTokenLockTimeout: TimeInterval? { backchannel?.initialTokenLockTimeout }

    /// Signs the same user in again for `requirement` (RFC 9470): the union of the granted and
    /// required scopes, the `acr_values` and `max_age` asked for, and the new ID token checked
    /// rule by rule, with its `acr` one of those asked for, its `auth_time` within `max_age`, and
    /// its `sub` the session's.
    ///
    /// - Throws: ``IDTokenValidationError`` (``IDTokenValidationError/Rule/acr``,
    ///   ``IDTokenValidationError/Rule/authTime``, ``IDTokenValidationError/Rule/subject``…);
    ///   `StepUpError` when the session cannot sign in again.
    public func stepUp(_ token: OAuthToken, to requirement: StepUpRequirement, for context: AuthenticationContext)
        async throws -> OAuthToken
    {
        if let backchannel, backchannel.allowsStepUp {
            let stepped = try await backchannel.stepUp(token, to: requirement, for: context)
            _ = try await validateBackchannel(
                stepped, acrValues: requirement.acrValues, subject: token.idTokenClaims?.subject, context: context)
            return stepped
        }
        guard let signIn = stepUpSignIn else { throw StepUpError(.unsupported, requirement: requirement) }
        let granted = [signIn.scope, token.scope].compactMap { $0 }.joined(separator: " ")
        let scope = requirement.scope(addedTo: granted) ?? signIn.scope
        let request = OpenIDAuthenticationRequest(
            maxAge: requirement.maxAge.map(TimeInterval.init),
            acrValues: requirement.acrValues.isEmpty ? nil : requirement.acrValues.joined(separator: " "))
        let nonce = AuthorizationRequest.makeState()
        let configuration = try AuthenticationConfiguration(
            metadata: signIn.metadata, client: endpoint.client, redirectURI: signIn.redirectURI,
            scope: scope, additionalParameters: request.parameters(nonce: nonce),
            resources: endpoint.resources, pushesAuthorizationRequests: signIn.pushesAuthorizationRequests)
        let result = try await CodeFlowManager(
            configuration: configuration, userAgent: signIn.userAgent, context: context
        )
        .authorize(account: account)
        guard let idToken = result.token.idToken else {
            throw IDTokenValidationError(.missing, "The step-up's token response has no id_token.")
        }
        var expectations = IDTokenExpectations(
            nonce: nonce, maxAge: request.maxAge, accessToken: result.token.accessToken,
            code: result.flow.authorizationCode)
        expectations.acrValues = requirement.acrValues
        expectations.subject = token.idTokenClaims?.subject
        _ = try await validator.validate(idToken, expecting: expectations, now: context.clock.now)
        return result.token
    }

    /// With CIBA, asks the user (`BackchannelAuthenticationFlow`) and validates the ID token
    /// (CIBA Core §10.1.1: the rules of Core §3.1.3.7 without a nonce, `at_hash` when present).
    /// Otherwise throws `AuthenticationError` `.missingCredential`: the user signs in through
    /// ``OpenIDClient/signIn(redirectURI:scope:request:userAgent:configuring:account:resources:pushesAuthorizationRequests:parametersRepeatedInBrowser:authorizationDetails:requestObjectSigner:signedAuthorizationResponses:signedResponseMode:allowsStepUp:)``.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        guard let backchannel else {
            throw AuthenticationError(
                code: .missingCredential,
                message: "No OpenID Connect session is stored for \(endpoint.client.clientID); sign in first.")
        }
        let token = try await backchannel.obtainToken(for: context)
        _ = try await validateBackchannel(token, acrValues: [], subject: nil, context: context)
        return token
    }

    /// Validates the ID token of a CIBA token response: present, every rule of Core §3.1.3.7
    /// but the nonce's, `at_hash` when present, and for a step-up the `acr` asked for and the
    /// session's `sub`.
    private func validateBackchannel(
        _ token: OAuthToken, acrValues: [String], subject: String?, context: AuthenticationContext
    ) async throws -> IDTokenClaims {
        guard let idToken = token.idToken else {
            throw IDTokenValidationError(
                .missing, "The CIBA token response has no id_token although openid was asked for.")
        }
        var expectations = IDTokenExpectations(accessToken: token.accessToken)
        expectations.acrValues = acrValues
        expectations.subject = subject
        return try await validator.validate(idToken, expecting: expectations, now: context.clock.now)
    }

    /// Refreshes, then validates the new ID token against the previous one or keeps the previous.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        var refreshed = try await endpoint.refresh(token, context: context)
        let previous = token.idTokenClaims
        if let idToken = refreshed.idToken {
            _ = try await validator.validate(
                idToken,
                expecting: IDTokenExpectations(accessToken: refreshed.accessToken, previous: previous),
                now: context.clock.now)
        } else {
            refreshed.idToken = token.idToken
        }
        return refreshed
    }

    /// The client, endpoint and account.
    public var description: String {
        "OpenIDSessionFlow(\(endpoint.client), tokenEndpoint: \(endpoint.url.redactedForDisplay)"
            + (account.map { ", account: \($0)" } ?? "") + ")"
    }
}
