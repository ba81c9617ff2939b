import AuthenticatedRequests
import Foundation
import OAuthFlows

/// What a successful sign-in produced: the token, and the flow that refreshes it.
public struct CodeFlowResult: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The token from the code exchange.
    public let token: OAuthToken
    /// The flow whose refreshes use the refresh token grant; hand it to an `OAuthAuthenticator`.
    public let flow: AuthorizationCodeFlow

    /// Creates a result, e.g. for a test double of a sign-in.
    public init(token: OAuthToken, flow: AuthorizationCodeFlow) {
        self.token = token
        self.flow = flow
    }

    /// The token and flow, redacted.
    public var description: String { "CodeFlowResult(token: \(token), flow: \(flow))" }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror showing only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// Runs the browser-based authorization code flow (RFC 6749 §4.1 with PKCE, RFC 8252 for native
/// apps, RFC 9700): builds the authorization URL, hands it to the user agent, validates the
/// redirect (state, error, issuer), exchanges the code once, and configures your authenticator.
///
/// ```swift
/// let manager = CodeFlowManager(configuration: AuthenticationConfiguration(
///     authorizationEndpoint: URL(string: "https://auth.example.com/authorize")!,
///     tokenEndpoint: URL(string: "https://auth.example.com/token")!,
///     client: .none(id: "my-cli"),
///     redirectURI: URL(string: "http://127.0.0.1/callback")!,
///     scope: "profile"))
/// try await manager.signIn(configuring: authenticator)
/// ```
///
/// One flow is in flight per manager: starting a second one **cancels** the first (its caller
/// gets `CancellationError`, its loopback socket is closed), then the second starts. A user who
/// clicks "Sign in" again after losing the browser tab gets a fresh attempt instead of a wait.
public actor CodeFlowManager {
    /// The server and client.
    public let configuration: AuthenticationConfiguration
    /// Presents the authorization page and receives the redirect.
    public let userAgent: any AuthorizationUserAgent
    /// Transport and clock for the code exchange (and a pushed request). When none was given,
    /// ``signIn(configuring:account:)`` uses the authenticator's context instead, so the
    /// transport is set once, on the authenticator.
    public let context: AuthenticationContext
    /// Whether ``context`` was given, rather than the default.
    private let hasOwnContext: Bool

    private var current: Task<CodeFlowResult, any Error>?

    /// Creates a manager that signs in through `userAgent`.
    ///
    /// - Parameters:
    ///   - configuration: The server and client.
    ///   - userAgent: Presents the authorization page and receives the redirect: a
    ///     ``LoopbackUserAgent``, `WebAuthenticationSessionUserAgent` (Apple platforms), a
    ///     ``CustomSchemeUserAgent``, or your own.
    ///   - context: Transport and clock for the code exchange; by default the authenticator's
    ///     that ``signIn(configuring:account:)`` configures (`URLSessionTransport.shared` for
    ///     ``authorize(account:)``).
    public init(
        configuration: AuthenticationConfiguration,
        userAgent: any AuthorizationUserAgent,
        context: AuthenticationContext? = nil
    ) {
        self.configuration = configuration
        self.userAgent = userAgent
        self.context = context ?? AuthenticationContext(transport: URLSessionTransport.shared)
        self.hasOwnContext = context != nil
    }

    #if os(macOS) || os(Linux) || (canImport(AuthenticationServices) && (os(iOS) || os(visionOS)))
        /// Creates a manager with the platform's default user agent: ``LoopbackUserAgent`` (the
        /// system browser) on macOS and Linux, `WebAuthenticationSessionUserAgent` on iOS, Mac
        /// Catalyst and visionOS.
        ///
        /// tvOS and watchOS have no default: there, pass a user agent to
        /// ``init(configuration:userAgent:context:)``, or use the device flow.
        ///
        /// - Parameters:
        ///   - configuration: The server and client.
        ///   - context: Transport and clock for the code exchange.
        public init(
            configuration: AuthenticationConfiguration,
            context: AuthenticationContext? = nil
        ) {
            self.init(configuration: configuration, userAgent: DefaultUserAgent.make(), context: context)
        }
    #endif

    /// Runs the flow and configures `authenticator` with the token and its refresh flow (which
    /// also stores the token in the authenticator's store).
    ///
    /// - Parameters:
    ///   - authenticator: The authenticator to configure with the new session.
    ///   - account: The account the session belongs to, for apps with several; the session is
    ///     stored under `TokenEndpoint.storeKey(account:)` and comes back with
    ///     `OAuthAuthenticator.restore(tokenEndpoint:client:account:store:configuration:)`.
    /// - Returns: The token the code was exchanged for.
    @discardableResult
    public func signIn(configuring authenticator: OAuthAuthenticator, account: String? = nil) async throws
        -> OAuthToken
    {
        let context = hasOwnContext ? self.context : authenticator.context
        let result = try await authorize(
            account: account, context: context,
            proofOfPossession: context.proofOfPossession ?? authenticator.configuration.proofOfPossession)
        await authenticator.configure(with: result.flow, token: result.token)
        return result.token
    }

    /// Runs the flow and returns the token and its refresh flow.
    ///
    /// - Throws: `OAuthError` for an error redirect (`access_denied` when
    ///   the user said no) or a failed exchange; ``CodeFlowError`` for a missing or wrong `state`,
    ///   an `iss` mismatch, a timeout; `CancellationError` when cancelled or replaced.
    public func authorize(account: String? = nil) async throws -> CodeFlowResult {
        try await authorize(account: account, context: context, proofOfPossession: context.proofOfPossession)
    }

    private func authorize(
        account: String?, context: AuthenticationContext, proofOfPossession: (any ProofOfPossession)?
    ) async throws -> CodeFlowResult {
        let previous = current
        previous?.cancel()
        let (configuration, userAgent) = (self.configuration, self.userAgent)
        let context = context.with(proofOfPossession: proofOfPossession)
        let task = Task {
            _ = await previous?.result  // let the previous attempt release its socket first
            return try await Self.run(
                configuration: configuration, userAgent: userAgent, context: context, account: account)
        }
        current = task
        defer { if current == task { current = nil } }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    private static func run(
        configuration: AuthenticationConfiguration,
        userAgent: any AuthorizationUserAgent,
        context: AuthenticationContext,
        account: String?
    ) async throws -> CodeFlowResult {
        try Task.checkCancellation()
        let endpoint = configuration.authorizationEndpoint
        let scheme = endpoint.scheme?.lowercased()
        guard endpoint.isSafeForSecrets || (context.allowsInsecureHTTP && scheme == "http" && endpoint.host != nil)
        else {
            throw CodeFlowError(
                .insecureAuthorizationEndpoint,
                "The authorization endpoint \(endpoint.redactedForDisplay) is not https (or http to a loopback "
                    + "address); no browser was opened."
            )
        }
        let session = try await userAgent.begin(redirectURI: configuration.redirectURI)
        let request: AuthorizationRequest
        var redirect: URL
        do {
            if configuration.signedResponseVerifier != nil {
                try session.receiveSignedResponse(in: configuration.signedResponseMode)
            }
            request = try await prepareRequest(
                configuration: configuration, redirectURI: session.redirectURI, context: context)
            redirect = try await session.present(request.url, state: request.state)
        } catch {
            await session.close()
            throw error
        }
        await session.close()
        if let verifier = configuration.signedResponseVerifier {
            redirect = try await verifiedRedirect(
                redirect, by: verifier, mode: configuration.signedResponseMode, clientID: configuration.client.clientID)
        }
        let response = try AuthorizationResponse(
            redirect: redirect,
            request: request,
            issuer: configuration.issuer,
            requiresIssuer: configuration.requiresIssuerParameter
        )
        let flow = AuthorizationCodeFlow(
            tokenEndpoint: configuration.tokenEndpoint,
            client: configuration.client,
            code: response.code,
            redirectURI: session.redirectURI.absoluteString,
            codeVerifier: request.pkce?.verifier,
            additionalParameters: try configuration.authorizationDetailsParameter().map {
                ["authorization_details": $0]
            } ?? [:],
            account: account,
            resources: configuration.tokenRequestResources ?? configuration.resources
        )
        let token = try await flow.obtainToken(for: context)
        return CodeFlowResult(token: token, flow: flow)
    }

    /// `redirect` with its signed `response` (JARM) replaced by the parameters it carries, once
    /// `verifier` has checked it; the usual checks (`state`, `iss`, the error) follow. The
    /// response is read where `mode` puts it (the fragment for `fragment.jwt`, else the query;
    /// a posted form arrives as the query) and nowhere else.
    private static func verifiedRedirect(
        _ redirect: URL, by verifier: any SignedAuthorizationResponseVerifier, mode: SignedResponseMode,
        clientID: String
    ) async throws -> URL {
        let signed =
            mode.usesFragment
            ? RedirectState.fragmentParameter("response", of: redirect)
            : RedirectState.parameter("response", of: redirect)
        guard let signed else {
            throw CodeFlowError(
                .missingSignedResponse,
                "A signed authorization response (JARM) was asked for and the redirect has none.")
        }
        let parameters = try await verifier.parameters(ofSignedResponse: signed, clientID: clientID)
        guard var components = URLComponents(url: redirect, resolvingAgainstBaseURL: false) else {
            throw CodeFlowError(.missingSignedResponse, "The redirect is not a valid URL.")
        }
        components.percentEncodedQuery = FormEncoding.encode(
            parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, spaceAsPlus: false)
        components.fragment = nil
        return components.url ?? redirect
    }

    /// The authorization request, signed as a request object (RFC 9101) when the configuration
    /// has a signer, and pushed first (RFC 9126) when it names a pushed authorization request
    /// endpoint.
    private static func prepareRequest(
        configuration: AuthenticationConfiguration,
        redirectURI: URL,
        context: AuthenticationContext
    ) async throws -> AuthorizationRequest {
        var request = try AuthorizationRequest(configuration: configuration, redirectURI: redirectURI)
        if let signer = configuration.requestObjectSigner {
            request = try await request.signedAsRequestObject(by: signer, configuration: configuration)
        }
        guard let endpoint = configuration.pushedAuthorizationRequestEndpoint else { return request }
        let pushed = try await PushedAuthorizationEndpoint(url: endpoint, client: configuration.client)
            .push(request.parameters, context: context)
        return try request.pushed(pushed, configuration: configuration)
    }
}
