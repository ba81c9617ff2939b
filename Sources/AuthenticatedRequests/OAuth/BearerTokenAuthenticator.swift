import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The OAuth 2.0 token schemes as an ``Authenticator``: applies `Authorization: Bearer <token>`
/// (RFC 6750), or for a token bound to a key `Authorization: DPoP <token>` with a fresh proof
/// (RFC 9449) when a ``ProofOfPossession`` is given, and refreshes through an ``OAuthFlow``.
public final class BearerTokenAuthenticator: Authenticator {
    /// The flow that obtains and refreshes tokens.
    public let flow: any OAuthFlow
    /// The proof of possession for bound tokens (DPoP); `nil` for bearer tokens only.
    public let proofOfPossession: (any ProofOfPossession)?

    /// The flow's ``OAuthFlow/resourceBoundary``, read once: it is checked for every request.
    private let boundary: ResourceBoundary?

    /// Creates an authenticator for `flow`; with `proofOfPossession`, bound tokens are proved.
    public init(flow: any OAuthFlow, proofOfPossession: (any ProofOfPossession)? = nil) {
        self.flow = flow
        self.proofOfPossession = proofOfPossession
        self.boundary = flow.resourceBoundary
    }

    /// Step-ups asked for by resources, by the access token they refused, until the refresh of
    /// that token runs them. A few at most: a token is refused, then replaced.
    private let pendingStepUps = Locked<[String: StepUpRequirement]>([:])

    /// Sets `Authorization: Bearer <access token>` (the scheme spelled `Bearer` whatever the
    /// server's casing, and `DPoP` likewise); another token type is applied under its own name. A token bound to a key
    /// (`DPoP`) is never applied here, where no proof can be made: use
    /// ``authorize(_:with:)``, as the ``AuthenticationInterceptor`` does.
    public func apply(_ credential: OAuthToken, to urlRequest: inout URLRequest) {
        guard !credential.isBound(by: proofOfPossession), credential.isAccessToken else { return }
        urlRequest.setAuthorization(Self.authorization(for: credential))
    }

    /// Applies the token; a bound token gets `Authorization: DPoP <token>` and a proof signed with
    /// its key.
    ///
    /// - Throws: ``AuthenticationError`` ``AuthenticationError/Code/keyUnavailable`` for a bound
    ///   token without a proof of possession or without its key; the token is not applied.
    public func authorize(_ urlRequest: inout URLRequest, with credential: OAuthToken) async throws {
        guard credential.isAccessToken else {
            throw AuthenticationError(
                code: .notAnAccessToken,
                message: "The token is not an access token (token_type \(credential.tokenType)"
                    + (credential.additionalFields["issued_token_type"]?.stringValue.map { ", issued_token_type \($0)" }
                        ?? "")
                    + ", RFC 8693 §2.2.1) and is never sent as one.")
        }
        guard credential.isBound(by: proofOfPossession) else {
            urlRequest.setAuthorization(Self.authorization(for: credential))
            return
        }
        guard let proofOfPossession, let key = credential.boundKey else {
            throw AuthenticationError(
                code: .keyUnavailable,
                message: "The \(credential.tokenType) token is bound to a key, and "
                    + (proofOfPossession == nil
                        ? "no proof of possession is configured; it is never sent as a bearer token."
                        : "the session has no key for it; sign in again.")
            )
        }
        urlRequest.setAuthorization(Self.authorization(for: credential))
        do {
            try await proofOfPossession.prove(&urlRequest, with: key, accessToken: credential.accessToken)
        } catch {
            urlRequest.setValue(nil, forHTTPHeaderField: "Authorization")
            throw AuthenticationError(
                code: .keyUnavailable,
                message: "The key of the \(credential.tokenType) token could not sign a proof; sign in again.",
                underlyingError: error
            )
        }
    }

    /// `false` for a token bound to a client certificate (``OAuthToken/certificateThumbprint``)
    /// other than the one `transport` presents now: the engine refreshes it over the new one.
    public func canSend(_ credential: OAuthToken, over transport: any HTTPTransport) throws -> Bool {
        guard let bound = credential.certificateThumbprint else { return true }
        return try transport.clientCertificateThumbprint() == bound
    }

    /// For a request with a proof: remembers the server's nonce, and `true` when a `401` challenge
    /// says `use_dpop_nonce` (RFC 9449 §9).
    public func shouldResend(_ urlRequest: URLRequest, after response: ResponseHead) -> Bool {
        guard let proofOfPossession, urlRequest.value(forHTTPHeaderField: "DPoP") != nil else { return false }
        let error =
            response.statusCode == 401
            ? Self.proofChallenge(in: response, scheme: proofOfPossession.tokenType)?.error.map {
                OAuthErrorCode(rawValue: $0)
            }
            : nil
        return proofOfPossession.didReceive(response, error: error, for: urlRequest)
    }

    /// Refreshes through the flow.
    /// Runs the flow's refresh, or its step-up when a resource refused `credential` asking for
    /// one (``OAuthFlow/stepUp(_:to:for:)``).
    public func refresh(_ credential: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        if let requirement = pendingStepUps.withLock({ $0.removeValue(forKey: credential.accessToken) }) {
            return try await flow.stepUp(credential, to: requirement, for: context)
        }
        return try await flow.refresh(credential, for: context)
    }

    /// Obtains a first token through the flow.
    public func initialCredential(for context: AuthenticationContext) async throws -> OAuthToken? {
        try await flow.obtainToken(for: context)
    }

    /// The flow's ``OAuthFlow/initialTokenLockTimeout``.
    public var initialCredentialLockTimeout: TimeInterval? { flow.initialTokenLockTimeout }

    /// `true` for a 401 whose `WWW-Authenticate` header, if present, has a `Bearer` challenge
    /// (any casing). A 401 that challenges only another scheme is not about this token.
    ///
    /// Also `true` for a 401 or 403 that asks for a step-up (``StepUpRequirement``) when the flow
    /// can step up (``OAuthFlow/canStepUp``): the refresh that follows is the flow's step-up.
    public func didRequest(
        _ urlRequest: URLRequest,
        with response: ResponseHead,
        failDueToAuthenticationError error: any Error
    ) -> Bool {
        if flow.canStepUp, let requirement = StepUpRequirement(response: response),
            let token = Self.accessToken(of: urlRequest)
        {
            pendingStepUps.withLock { pending in
                if pending.count >= 16 { pending.removeAll() }
                pending[token] = requirement
            }
            return true
        }
        guard response.statusCode == 401 else { return false }
        guard let header = response.value(forHTTPHeaderField: "WWW-Authenticate"),
            !header.trimmingCharacters(in: .whitespaces).isEmpty
        else {
            return true
        }
        let challenges = AuthenticationChallenge.parse(header)
        if let proofOfPossession, urlRequest.value(forHTTPHeaderField: "DPoP") != nil,
            let challenge = challenges.first(where: { $0.hasScheme(proofOfPossession.tokenType) })
        {
            // A nonce or a refused proof is about the proof, not the token: a refresh cannot help.
            let error = challenge.error.map { OAuthErrorCode(rawValue: $0) }
            return error != .useDPoPNonce && error != .invalidDPoPProof
        }
        return challenges.contains { $0.hasScheme("Bearer") }
    }

    private static func proofChallenge(in response: ResponseHead, scheme: String) -> AuthenticationChallenge? {
        guard let header = response.value(forHTTPHeaderField: "WWW-Authenticate") else { return nil }
        return AuthenticationChallenge.parse(header).first { $0.hasScheme(scheme) }
    }

    /// A ``StepUpError`` (``StepUpError/Code/refusedAfterStepUp``) when the resource asks for a
    /// step-up again after the one it got: no second step-up follows.
    public func errorForRejectedRetry(_ urlRequest: URLRequest, response: ResponseHead) -> (any Error)? {
        guard flow.canStepUp, let requirement = StepUpRequirement(response: response) else { return nil }
        if let token = Self.accessToken(of: urlRequest) {
            pendingStepUps.withLock { _ = $0.removeValue(forKey: token) }
        }
        return StepUpError(.refusedAfterStepUp, requirement: requirement, url: urlRequest.url)
    }

    /// The access token in `urlRequest`'s `Authorization` header (`Bearer …`, `DPoP …`).
    private static func accessToken(of urlRequest: URLRequest) -> String? {
        guard let header = urlRequest.value(forHTTPHeaderField: "Authorization"),
            let space = header.firstIndex(of: " ")
        else { return nil }
        return String(header[header.index(after: space)...])
    }

    /// Whether the flow's tokens may go to `url`: inside its ``OAuthFlow/resourceBoundary``, or
    /// anywhere when it names none.
    public func canAuthenticate(_ url: URL) -> Bool {
        boundary?.contains(url) ?? true
    }

    /// Whether both carry the same access token, whatever else differs (expiry, scope, refresh
    /// token): a refresh that returns the rejected access token has not renewed it.
    public func carriesSameToken(_ fresh: OAuthToken, as rejected: OAuthToken, on urlRequest: URLRequest) -> Bool {
        fresh.accessToken == rejected.accessToken
    }

    /// Whether the request's `Authorization` header carries this token.
    public func isRequest(_ urlRequest: URLRequest, authenticatedWith credential: OAuthToken) -> Bool {
        urlRequest.value(forHTTPHeaderField: "Authorization") == Self.authorization(for: credential)
    }

    /// `true` for `invalid_grant`: the refresh token (or code) is dead and the user must sign in.
    public func isCredentialInvalidated(by error: any Error) -> Bool {
        (error as? OAuthError)?.code == .invalidGrant
    }

    /// `<scheme> <access token>`, the scheme spelled as its RFC does whatever the server's
    /// casing: `Bearer` (RFC 6750) for `bearer` or an empty type, `DPoP` (RFC 9449) for `dpop` or
    /// `dpOp`; another type as the server sent it.
    static func authorization(for token: OAuthToken) -> String {
        "\(scheme(of: token.tokenType)) \(token.accessToken)"
    }

    /// The `Authorization` scheme of `tokenType`, spelled as its RFC does.
    static func scheme(of tokenType: String) -> String {
        if tokenType.isEmpty || tokenType.isEqualIgnoringASCIICase(to: "Bearer") { return "Bearer" }
        if tokenType.isEqualIgnoringASCIICase(to: "DPoP") { return "DPoP" }
        return tokenType
    }
}

/// The OAuth 2.0 authenticator: the ``AuthenticationInterceptor`` running bearer tokens from an
/// ``OAuthFlow``.
///
/// ```swift
/// let authenticator = OAuthAuthenticator(store: FileTokenStore(directory: tokensFolder))
/// await authenticator.configure(with: ClientCredentialsFlow(
///     tokenEndpoint: URL(string: "https://auth.example.com/token")!,
///     client: .clientSecretBasic(id: "my-app", secret: secret),
///     scope: "read"))
/// let me = try await Me(authenticator: authenticator).request()
/// ```
public typealias OAuthAuthenticator = AuthenticationInterceptor<BearerTokenAuthenticator>

extension AuthenticationInterceptor where A == BearerTokenAuthenticator {
    /// Creates an OAuth authenticator that uses `flow`, keeping tokens in `store` under the
    /// flow's ``OAuthFlow/storeKey``.
    public init(
        flow: any OAuthFlow,
        token: OAuthToken? = nil,
        store: (any TokenStore)? = nil,
        configuration: Configuration = Configuration()
    ) {
        self.init(
            authenticator: BearerTokenAuthenticator(flow: flow, proofOfPossession: configuration.proofOfPossession),
            credential: token,
            store: store,
            storeKey: flow.storeKey,
            configuration: configuration
        )
    }

    /// Uses `flow` from now on (the seed package's `configure(with:)`).
    ///
    /// With a `token`, it becomes current and is stored. Without one, the token stored under the
    /// flow's ``OAuthFlow/storeKey`` is used, or the flow obtains one at the first request.
    public func configure(with flow: any OAuthFlow, token: OAuthToken? = nil) async {
        await configure(
            with: BearerTokenAuthenticator(flow: flow, proofOfPossession: configuration.proofOfPossession),
            credential: token, storeKey: flow.storeKey)
    }
}
