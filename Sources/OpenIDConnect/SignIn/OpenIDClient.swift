import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A session signed in with OpenID Connect: the tokens, and who signed in.
public struct OpenIDSession: Sendable, CustomStringConvertible {
    /// The tokens (the ID token among them); stored by the authenticator.
    public let token: OAuthToken
    /// The validated claims of the ID token.
    public let claims: IDTokenClaims

    /// The claims and the redacted token.
    public var description: String { "OpenIDSession(\(claims), token: \(token))" }
}

/// A client of an OpenID provider: signs users in with the code flow, PKCE and a nonce and
/// validates their ID token; reads UserInfo; signs them out at the provider.
///
/// ```swift
/// let provider = try await OpenIDProvider.discover(issuer: URL(string: "https://accounts.example.com")!)
/// let oidc = OpenIDClient(provider: provider, client: .none(id: "my-app"))
/// let session = try await oidc.signIn(
///     redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "openid profile email",
///     userAgent: LoopbackUserAgent(), configuring: authenticator)
/// print(session.claims.subject, session.claims.email ?? "")
/// ```
public struct OpenIDClient: Sendable {
    /// The provider.
    public let provider: OpenIDProvider
    /// The client and how it authenticates.
    public let client: ClientAuthentication
    /// Transport and clock. When none was given, sign-in uses the context of the authenticator
    /// it configures, so the transport is set once, on the authenticator.
    public let context: AuthenticationContext
    /// Whether ``context`` was given, rather than the default.
    let hasOwnContext: Bool
    /// Validates ID tokens for this client.
    public let validator: IDTokenValidator
    /// The claims providers whose aggregated and distributed claims (Core §5.6.2) are verified,
    /// with their keys. Empty by default: only the OpenID provider itself is trusted, for claims
    /// JWTs whose `iss` is its issuer; a JWT from anyone else is never verified with keys it
    /// points to, and its claims are not used (``UserInfo/failedClaimSources``).
    public var claimsProviders: [ClaimsProvider] = []

    /// Creates the client.
    ///
    /// - Parameters:
    ///   - provider: The OpenID provider.
    ///   - client: The client and how it authenticates at the token endpoint.
    ///   - clientSecretForHMAC: The client secret, only when HS256 ID tokens are expected
    ///     (`options.allowsHMAC`).
    ///   - options: ID token validation settings; strict by default.
    ///   - context: Transport and clock.
    public init(
        provider: OpenIDProvider, client: ClientAuthentication, clientSecretForHMAC: String? = nil,
        options: IDTokenValidator.Options = IDTokenValidator.Options(),
        context: AuthenticationContext? = nil
    ) {
        self.provider = provider
        self.client = client.at(issuer: provider.metadata.issuer)  // the audience of its assertions (RFC 10070)
        self.context = context ?? AuthenticationContext(transport: URLSessionTransport.shared)
        self.hasOwnContext = context != nil
        self.validator = IDTokenValidator(
            issuer: provider.issuer, clientID: client.clientID, keys: provider.keys,
            advertisedAlgorithms: provider.idTokenSigningAlgorithms, clientSecret: clientSecretForHMAC,
            options: options)
    }

    // MARK: Sign-in

    /// Signs the user in: the authorization code flow with PKCE and a fresh nonce through
    /// `userAgent`, then the ID token validated rule by rule; `authenticator` keeps the session
    /// (refreshes validate new ID tokens against it).
    ///
    /// - Parameters:
    ///   - redirectURI: The redirect URI registered for the client.
    ///   - scope: Must contain `openid`; it is added when missing.
    ///   - request: `prompt`, `max_age`, `login_hint`, `ui_locales`, `acr_values`.
    ///   - userAgent: Presents the authorization page and brings the redirect back.
    ///   - authenticator: Keeps the session (its store too).
    ///   - account: The account the session belongs to, for apps with several.
    ///   - resources: RFC 8707 resource indicators, sent with the authorization request, the code
    ///     exchange and every refresh.
    ///   - pushesAuthorizationRequests: Whether to push the request first (PAR, RFC 9126); a
    ///     provider whose metadata requires it gets it anyway.
    ///   - parametersRepeatedInBrowser: With PAR, the parameters a provider wants repeated next to
    ///     `request_uri` in the browser.
    ///   - authorizationDetails: RFC 9396 `authorization_details`, sent with the authorization
    ///     request and the code exchange; the granted ones come back with the token.
    ///   - requestObjectSigner: Signs the authorization request as a request object (RFC 9101,
    ///     JAR), sent by value or pushed; e.g. the client's `PrivateKeyJWT`.
    ///   - signedAuthorizationResponses: Whether to ask for a signed authorization response
    ///     (JARM, `response_mode=jwt`), validated with ``SignedAuthorizationResponseValidator``
    ///     before anything in it is used.
    ///   - signedResponseMode: How the signed response comes back (`jwt` unless given; e.g.
    ///     `formPostJWT` with the loopback receiver, `fragmentJWT` with an agent that hands back
    ///     the whole redirect URL).
    ///   - allowsStepUp: Whether the session signs the same user in again in `userAgent` when a
    ///     resource asks for a step-up (`insufficient_scope`, or RFC 9470's `acr_values` and
    ///     `max_age`), checking the new ID token for them; `false` passes such a refusal on.
    /// - Throws: ``IDTokenValidationError`` naming the rule a bad ID token broke (the session is
    ///   then not stored), and what `CodeFlowManager` throws.
    public func signIn(
        redirectURI: URL, scope: String = "openid",
        request: OpenIDAuthenticationRequest = OpenIDAuthenticationRequest(),
        userAgent: any AuthorizationUserAgent, configuring authenticator: OAuthAuthenticator, account: String? = nil,
        resources: [URL] = [], pushesAuthorizationRequests: Bool = false, parametersRepeatedInBrowser: [String] = [],
        authorizationDetails: [AuthorizationDetail] = [], requestObjectSigner: (any RequestObjectSigner)? = nil,
        signedAuthorizationResponses: Bool = false, signedResponseMode: SignedResponseMode = .jwt,
        allowsStepUp: Bool = false
    ) async throws -> OpenIDSession {
        let scopes = scope.split(separator: " ").map(String.init)
        let fullScope = scopes.contains("openid") ? scope : (["openid"] + scopes).joined(separator: " ")
        let nonce = AuthorizationRequest.makeState()
        var configuration = try AuthenticationConfiguration(
            metadata: provider.metadata, client: client, redirectURI: redirectURI, scope: fullScope,
            additionalParameters: request.parameters(nonce: nonce), resources: resources,
            pushesAuthorizationRequests: pushesAuthorizationRequests,
            parametersRepeatedInBrowser: parametersRepeatedInBrowser)
        configuration.authorizationDetails = authorizationDetails
        configuration.requestObjectSigner = requestObjectSigner
        if signedAuthorizationResponses {
            configuration.signedResponseVerifier = SignedAuthorizationResponseValidator(
                provider: provider, clock: (hasOwnContext ? self.context : authenticator.context).clock)
            configuration.signedResponseMode = signedResponseMode
        }
        // The code exchange proves the session's DPoP key when the authenticator has a prover.
        let context = hasOwnContext ? self.context : authenticator.context
        let manager = CodeFlowManager(
            configuration: configuration, userAgent: userAgent,
            context: context.with(
                proofOfPossession: context.proofOfPossession ?? authenticator.configuration.proofOfPossession))
        let result = try await manager.authorize(account: account)
        guard let idToken = result.token.idToken else {
            throw IDTokenValidationError(.missing, "The token response has no id_token although openid was asked for.")
        }
        let claims = try await validator.validate(
            idToken,
            expecting: IDTokenExpectations(
                nonce: nonce, maxAge: request.maxAge, accessToken: result.token.accessToken,
                code: result.flow.authorizationCode),
            now: context.clock.now)
        var flow = try sessionFlow(account: account, resources: resources)
        if allowsStepUp {
            flow.stepUpSignIn = OpenIDSessionFlow.StepUpSignIn(
                metadata: provider.metadata, redirectURI: redirectURI, scope: fullScope, userAgent: userAgent,
                pushesAuthorizationRequests: pushesAuthorizationRequests)
        }
        await authenticator.configure(with: flow, token: result.token)
        return OpenIDSession(token: result.token, claims: claims)
    }

    /// The flow of this client's sessions; `resources` are sent with every refresh.
    public func sessionFlow(account: String? = nil, resources: [URL] = []) throws -> OpenIDSessionFlow {
        OpenIDSessionFlow(
            tokenEndpoint: try provider.metadata.tokenEndpoint(client: client).url, client: client, account: account,
            validator: validator, resources: resources)
    }

    /// The flow of a session whose user is asked through CIBA (OpenID Connect Client-Initiated
    /// Backchannel Authentication, and FAPI-CIBA with `requestObjectSigner` and a
    /// `private_key_jwt` client): an `OAuthAuthenticator` with it asks the user named in
    /// `request` when it has no session, on the user's own device, waits for their approval,
    /// validates the ID token (no nonce in CIBA), and then refreshes as any session of this client
    /// (the same ``OpenIDSessionFlow/storeKey``: ``restore(store:account:configuration:)`` brings
    /// it back without asking). Every request that needs the session meanwhile waits for the one
    /// approval, in every process sharing the store.
    ///
    /// - Parameters:
    ///   - request: Whom to ask and what (`binding_message`, `authorization_details`…).
    ///   - deliveryMode: `.poll` or `.ping` with the application's notification endpoint.
    ///   - account: The account the session belongs to, for apps with several.
    ///   - resources: RFC 8707 resource indicators sent with every refresh.
    ///   - allowsStepUp: Whether a resource's step-up challenge (`insufficient_scope`,
    ///     `insufficient_user_authentication`, `insufficient_authorization_details`) asks the
    ///     same user again through CIBA, checking the new ID token's `sub` and `acr`.
    ///   - requestObjectSigner: Signs every authentication request (CIBA Core §7.1.1), as
    ///     FAPI-CIBA requires; e.g. the client's `PrivateKeyJWT`.
    ///   - onRequest: Receives the provider's acknowledgement (show its binding message).
    /// - Throws: `TokenEndpointError` when the provider has no `backchannel_authentication_endpoint`
    ///   or does not offer the delivery mode, a `user_code` or the signing algorithm asked for.
    public func backchannelSessionFlow(
        request: BackchannelAuthenticationRequest, deliveryMode: BackchannelAuthenticationFlow.DeliveryMode = .poll,
        account: String? = nil, resources: [URL] = [], allowsStepUp: Bool = false,
        requestObjectSigner: (any RequestObjectSigner)? = nil,
        onRequest: @escaping @Sendable (BackchannelAuthentication) async -> Void = { _ in }
    ) throws -> OpenIDSessionFlow {
        var backchannel = try provider.metadata.backchannelAuthenticationFlow(
            client: client, request: request, deliveryMode: deliveryMode, requestObjectSigner: requestObjectSigner,
            onRequest: onRequest)
        backchannel.account = account
        backchannel.allowsStepUp = allowsStepUp
        var flow = try sessionFlow(account: account, resources: resources)
        flow.backchannel = backchannel
        return flow
    }

    /// Brings back a session signed in earlier from `store`, or `nil` when there is none.
    public func restore(
        store: any TokenStore, account: String? = nil,
        configuration: OAuthAuthenticator.Configuration = OAuthAuthenticator.Configuration()
    ) async throws -> OAuthAuthenticator? {
        try await OAuthAuthenticator.restore(
            flow: try sessionFlow(account: account), store: store, configuration: configuration)
    }

    // MARK: Sign-out

    /// The provider's revocation endpoint: from its OpenID discovery document, or else from its
    /// RFC 8414 document (some providers list it only there); `nil` when neither names one.
    func revocationEndpoint() async -> URL? {
        if let endpoint = provider.metadata.resolved(for: client).revocationEndpoint { return endpoint }
        guard let issuer = URL(string: provider.issuer),
            let metadata = try? await AuthorizationServerMetadata.discover(
                issuer: issuer, document: .oauthAuthorizationServer, context: context)
        else { return nil }
        return metadata.resolved(for: client).revocationEndpoint
    }

    /// The provider's logout URL (RP-Initiated Logout 1.0 §2): `id_token_hint`, `client_id`,
    /// and, when given, `post_logout_redirect_uri` and `state`.
    public func endSessionURL(idTokenHint: String?, postLogoutRedirectURI: URL?, state: String?) throws -> URL {
        guard let endpoint = provider.endSessionEndpoint,
            var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false)
        else {
            throw OpenIDConnectError(.missingEndpoint, "The provider has no end_session_endpoint.")
        }
        var items = components.queryItems ?? []
        if let idTokenHint { items.append(URLQueryItem(name: "id_token_hint", value: idTokenHint)) }
        items.append(URLQueryItem(name: "client_id", value: client.clientID))
        if let postLogoutRedirectURI {
            items.append(URLQueryItem(name: "post_logout_redirect_uri", value: postLogoutRedirectURI.absoluteString))
        }
        if let state { items.append(URLQueryItem(name: "state", value: state)) }
        components.percentEncodedQuery = items.map {
            FormEncoding.encode($0.name, spaceAsPlus: false) + "="
                + FormEncoding.encode($0.value ?? "", spaceAsPlus: false)
        }.joined(separator: "&")
        guard let url = components.url else {
            throw OpenIDConnectError(.missingEndpoint, "The end_session_endpoint is not a valid URL.")
        }
        return url
    }

    /// Signs the user out: revokes the tokens where the provider can (RFC 7009) and deletes them,
    /// then, with a `userAgent`, ends the session at the provider (RP-Initiated Logout) and waits
    /// for its redirect to `postLogoutRedirectURI` with the `state` sent.
    ///
    /// The tokens are deleted even when revocation or the logout page fails; the first failure
    /// is thrown afterwards.
    public func signOut(
        _ authenticator: OAuthAuthenticator, postLogoutRedirectURI: URL? = nil,
        userAgent: (any AuthorizationUserAgent)? = nil
    ) async throws {
        let idToken = try? await authenticator.currentCredential()?.idToken
        var failure: (any Error)?
        if let revocation = await revocationEndpoint() {
            do {
                try await authenticator.signOut(revokingAt: RevocationEndpoint(url: revocation, client: client))
            } catch {
                failure = error
            }
        } else {
            await authenticator.clearCredential()
        }
        guard let userAgent, let postLogoutRedirectURI, provider.endSessionEndpoint != nil else {
            if let failure { throw failure }
            return
        }
        let session = try await userAgent.begin(redirectURI: postLogoutRedirectURI)
        let state = AuthorizationRequest.makeState()
        do {
            let url = try endSessionURL(
                idTokenHint: idToken ?? nil, postLogoutRedirectURI: session.redirectURI, state: state)
            let redirect = try await session.present(url)
            await session.close()
            let returned = URLComponents(url: redirect, resolvingAgainstBaseURL: false)?.queryItems?
                .first { $0.name == "state" }?.value
            guard returned == state else {
                throw OpenIDConnectError(.logoutStateMismatch, "The logout redirect did not carry the state sent.")
            }
        } catch {
            await session.close()
            throw error
        }
        if let failure { throw failure }
    }
}
