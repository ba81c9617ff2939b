import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The authenticator actor: holds the current credential of one ``Authenticator`` and runs its
/// lifecycle for every request.
///
/// For each request it:
/// 1. fails with ``AuthenticationError/Code/missingCredential`` when there is no credential and
///    no way to get one, before anything is sent;
/// 2. refreshes a credential that expires within ``Configuration/leeway`` before sending;
/// 3. after a response the authenticator classifies as an authentication failure, refreshes and
///    retries once, never more; a refresh that hands back the rejected token (same access token,
///    only its expiry changed) is not a new credential: it is never sent, and the refresh is made
///    again, each time counting against the limit of point 7;
/// 4. retries without a refresh when the rejected request carried an older credential than the
///    current one;
/// 5. shares one refresh among all concurrent callers; a cancelled caller stops waiting at once,
///    and its cancellation does not cancel the refresh;
/// 6. fails every waiter with the refresh's error, clearing the credential when the authenticator
///    says the grant is dead and keeping it otherwise;
/// 7. stops refresh loops with ``AuthenticationError/Code/excessiveRefresh``; a refreshed
///    credential that has already expired is not sent and fails the request with
///    ``AuthenticationError/Code/expiredInFlight``;
/// 8. writes every change of credential to the ``TokenStore``;
/// 9. sends a request once more, with the same credential applied afresh, when the authenticator
///    asks (``Authenticator/shouldResend(_:after:)``: a DPoP server's nonce). That is not a
///    refresh and does not count as one; each attempt is resent at most once.
///
/// ``OAuthAuthenticator`` is this actor with ``BearerTokenAuthenticator``.
public actor AuthenticationInterceptor<A: Authenticator>: RequestAuthenticator {
    /// The credential type of the authenticator.
    public typealias Credential = A.Credential

    /// How the interceptor behaves; every field has a default.
    public struct Configuration: Sendable {
        /// Refresh this long before expiry; 60 seconds unless given.
        public var leeway: TimeInterval
        /// The excessive-refresh guard.
        public var refreshLimit: RefreshLimit
        /// The clock that judges expiry.
        public var clock: any WallClock
        /// The transport of this client, ``URLSessionTransport/shared`` unless given: for the
        /// authorization server (refreshes, and anything given ``AuthenticationInterceptor/context``,
        /// such as discovery and revocation), and for every ``AuthenticatedResource`` of this
        /// authenticator that names no transport of its own. Set it once, e.g. to an
        /// `AsyncHTTPClientTransport` on a server.
        public var tokenTransport: any HTTPTransport
        /// Whether credentials may go over plain `http` to non-loopback hosts; `false` unless given.
        public var allowsInsecureHTTP: Bool
        /// The total deadline of each request to the authorization server, in seconds; 30 unless
        /// given. When it passes, the shared refresh is cancelled and every request waiting for
        /// it fails at once.
        public var authorizationServerTimeout: TimeInterval
        /// How long a refresh waits for the token store's refresh lock while another process
        /// refreshes the same entry, in seconds; 60 unless given. At the bound the request fails
        /// with ``AuthenticationError/Code/refreshFailed`` (underlying
        /// ``TokenStoreError/Code/lockTimedOut``); it never refreshes without the lock.
        public var storeLockTimeout: TimeInterval
        /// How long the authorization server keeps accepting a refresh token after it rotated it
        /// (Auth0's "reuse interval", Okta's grace period, Keycloak's refresh token max reuse), in
        /// seconds; `nil` unless given: no such period is assumed.
        ///
        /// When a process died while refreshing (``AuthenticationError/Code/refreshOutcomeUnknown``)
        /// less than this long ago, the next refresh retries with the stored, unrotated refresh
        /// token, which the server still accepts. Older than that, or without this setting, the
        /// engine stays conservative and reports the unknown outcome.
        public var refreshTokenReuseGracePeriod: TimeInterval?
        /// Proof of possession for sender-constrained tokens: a `DPoP` (module `DPoP`) binds every
        /// token an ``OAuthAuthenticator`` obtains to a key and proves it on every request. `nil`
        /// unless given: bearer tokens.
        public var proofOfPossession: (any ProofOfPossession)?

        /// Creates a configuration.
        public init(
            leeway: TimeInterval = 60,
            refreshLimit: RefreshLimit = RefreshLimit(),
            clock: any WallClock = SystemWallClock(),
            tokenTransport: any HTTPTransport = URLSessionTransport.shared,
            allowsInsecureHTTP: Bool = false,
            authorizationServerTimeout: TimeInterval = HTTPTransportOptions.defaultAuthorizationServerTimeout,
            storeLockTimeout: TimeInterval = 60,
            proofOfPossession: (any ProofOfPossession)? = nil,
            refreshTokenReuseGracePeriod: TimeInterval? = nil
        ) {
            self.refreshTokenReuseGracePeriod = refreshTokenReuseGracePeriod
            self.leeway = leeway
            self.refreshLimit = refreshLimit
            self.clock = clock
            self.tokenTransport = tokenTransport
            self.allowsInsecureHTTP = allowsInsecureHTTP
            self.authorizationServerTimeout = authorizationServerTimeout
            self.storeLockTimeout = storeLockTimeout
            self.proofOfPossession = proofOfPossession
        }
    }

    /// The configuration given at creation.
    public nonisolated let configuration: Configuration

    nonisolated let store: (any TokenStore)?
    /// The store entry of the current credential; kept with the credential state, because the
    /// refresh reads it off the actor.
    nonisolated var storeKey: String? { state.withLock { $0.storeKey } }
    /// Whether the store may hold a credential not yet read.
    var needsStoreLoad: Bool
    /// Whether the credential given at creation is not yet saved (an initializer cannot await).
    var needsInitialSave: Bool
    var observers: [UUID: AsyncStream<AuthenticationEvent>.Continuation] = [:]
    var sessionObservers: [UUID: AsyncStream<SessionState>.Continuation] = [:]
    /// The session's state, as ``sessionStates()`` reports it.
    var sessionState: SessionState
    /// When the session is ``SessionState/refreshOutcomeUnknown``: the refresh whose outcome
    /// nobody knows, when it started and which process ran it; `nil` otherwise.
    public internal(set) var unknownRefreshOutcome: UnknownRefreshOutcome?
    /// Authenticator, credential and the refresh under way; see ``CredentialState``.
    nonisolated let state: Locked<CredentialState<A>>

    /// The client's transport (``Configuration/tokenTransport``), for resources that name none.
    public nonisolated var transport: any HTTPTransport { configuration.tokenTransport }

    /// The transport, clock and policy that refreshes use; also for calls such as revocation.
    public nonisolated var context: AuthenticationContext { configuration.context }

    /// Creates an interceptor.
    ///
    /// - Parameters:
    ///   - authenticator: the scheme; without one, requests fail with
    ///     ``AuthenticationError/Code/missingCredential`` until ``configure(with:credential:storeKey:)``.
    ///   - credential: a credential to start with; otherwise it is read from `store` on first use.
    ///   - store: where credentials are kept across launches; none unless given.
    ///   - storeKey: the store entry; two clients must never share one.
    ///   - configuration: leeway, refresh limit, clock and transport.
    public init(
        authenticator: A? = nil,
        credential: Credential? = nil,
        store: (any TokenStore)? = nil,
        storeKey: String? = nil,
        configuration: Configuration = Configuration()
    ) {
        let needsStoreLoad = credential == nil && store != nil && storeKey != nil
        let needsInitialSave = credential != nil && store != nil && storeKey != nil
        self.store = store
        self.configuration = configuration
        self.sessionState = credential == nil ? .signedOut : .signedIn
        self.needsStoreLoad = needsStoreLoad
        self.needsInitialSave = needsInitialSave
        self.state = Locked(
            CredentialState(
                authenticator: authenticator,
                credential: credential,
                storeKey: storeKey,
                isSettled: !needsStoreLoad && !needsInitialSave
            )
        )
    }

    // MARK: - Configuration and state

    /// Switches to `authenticator`, dropping the previous one's credential from memory.
    ///
    /// With a `credential`, it becomes current and is saved to the store. Without one, the
    /// credential is read from the store entry `storeKey` on first use, or obtained through
    /// ``Authenticator/initialCredential(for:)``.
    public func configure(with authenticator: A, credential: Credential? = nil, storeKey: String? = nil) async {
        needsInitialSave = false
        needsStoreLoad = credential == nil && store != nil && (storeKey ?? self.storeKey) != nil
        let isSettled = !needsStoreLoad
        state.withLock { state in
            if let storeKey { state.storeKey = storeKey }
            state.authenticator = authenticator
            state.credential = credential
            state.resetRefreshState()
            state.generation &+= 1
            state.isSettled = isSettled
        }
        if let credential {
            await save(credential)
            emit(.credentialObtained)
        }
    }

    /// Whether an authenticator is configured (for an ``OAuthAuthenticator``, a flow): without
    /// one, a credential cannot be applied or refreshed.
    public nonisolated var isConfigured: Bool { state.withLock { $0.authenticator != nil } }

    /// The current credential, read from the store if not yet loaded; `nil` when there is none.
    /// Does not refresh.
    public func currentCredential() async throws -> Credential? {
        try await settle()
        return state.withLock { $0.credential }
    }

    /// A credential valid for a request now: the current one, refreshed or obtained as needed.
    public nonisolated func validCredential() async throws -> Credential {
        try await credentialForRequest().credential
    }

    /// Replaces the current credential, e.g. after a sign-in done elsewhere; saved to the store.
    ///
    /// A refresh under way is abandoned: requests waiting for it use `credential` instead, and
    /// the refresh budget of the ``RefreshLimit`` starts afresh.
    public func setCredential(_ credential: Credential) async {
        commit(credential)
        await save(credential)
        emit(.credentialObtained)
    }

    /// Forgets the credential, in memory and in the store (sign-out).
    ///
    /// A refresh under way is abandoned: its result is neither stored nor sent, and requests
    /// waiting for it fail with ``AuthenticationError/Code/missingCredential``.
    public func clearCredential() async {
        commit(nil)
        await removeFromStore()
        emit(.credentialCleared)
    }

    /// Makes `credential` current, ending any refresh under way and any pending store work.
    private func commit(_ credential: Credential?) {
        needsStoreLoad = false
        needsInitialSave = false
        state.withLock { state in
            state.credential = credential
            state.resetRefreshState()
            state.generation &+= 1
            state.isSettled = true
        }
    }

    /// Whether anyone is listening to ``events()`` now.
    public var hasEventObservers: Bool { !observers.isEmpty }

    /// A stream of what the interceptor does from now on. Each call makes a new stream;
    /// it ends when the caller stops iterating.
    public func events() -> AsyncStream<AuthenticationEvent> {
        let (stream, continuation) = AsyncStream<AuthenticationEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        observers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeObserver(id) }
        }
        return stream
    }

    /// The session's state now, then every change, without polling: ``SessionState/signedIn``
    /// after a sign-in, a restore or a refresh, ``SessionState/signedOut`` after a sign-out,
    /// ``SessionState/reauthenticationRequired`` when the server rejected the grant. The stored
    /// credential is read first if it was not yet. Each call makes a new stream; it ends when
    /// the caller stops iterating.
    public func sessionStates() async -> AsyncStream<SessionState> {
        try? await settle()
        let (stream, continuation) = AsyncStream<SessionState>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        sessionObservers[id] = continuation
        continuation.yield(sessionState)
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeSessionObserver(id) }
        }
        return stream
    }

    /// Ends every stream that ``events()`` returned: each delivers what it has buffered, then
    /// ends. For a program that prints the events and is about to exit: finish, then await the
    /// loops that print them, and nothing is lost. Later calls of ``events()`` get new streams.
    public func finishEvents() {
        let finishing = observers.values
        observers = [:]
        for continuation in finishing { continuation.finish() }
    }

    private func removeSessionObserver(_ id: UUID) {
        sessionObservers[id] = nil
    }

    /// Records a new session state and tells the observers when it changed.
    func setSessionState(_ newState: SessionState) {
        if newState != .refreshOutcomeUnknown { unknownRefreshOutcome = nil }
        guard newState != sessionState else { return }
        sessionState = newState
        for continuation in sessionObservers.values { continuation.yield(newState) }
    }

    // MARK: - Sending

    /// Applies the credential, sends `request` over `transport`, and on an authentication failure
    /// refreshes once and retries once.
    @_specialize(where A == BearerTokenAuthenticator)
    public nonisolated func send(
        _ request: consuming URLRequest,
        over transport: any HTTPTransport
    ) async throws -> (Data, ResponseHead) {
        // `@_specialize` compiles a copy for the OAuth authenticator that the generic code jumps
        // to: without it every request paid for generic metadata lookups and task allocations
        // (~1,600 instructions, callgrind). This forwarder holds no value of a generic type, so
        // the generic entry allocates nothing before it jumps.
        try await sendAuthenticated(request, over: transport)
    }

    private nonisolated func sendAuthenticated(
        _ request: consuming URLRequest,
        over transport: any HTTPTransport
    ) async throws -> (Data, ResponseHead) {
        var authenticated = request
        var authenticator: A
        var credential: Credential
        let epoch: UInt64
        if let (readyAuthenticator, readyCredential, readyEpoch) = readyCredential() {
            (authenticator, credential, epoch) = (readyAuthenticator, readyCredential, readyEpoch)
        } else {
            // Before any sign-in or refresh: a URL outside the credential's resource gets nothing.
            if let configured = state.withLock({ $0.authenticator }) {
                try Self.checkBoundary(of: authenticated, by: configured)
            }
            (authenticator, credential, epoch) = try await credentialForRequest()
            try Task.checkCancellation()
        }
        if try !authenticator.canSend(credential, over: transport) {
            (authenticator, credential) = try await credentialForCurrentCertificate(
                of: authenticated, replacing: credential, by: authenticator, sentAtEpoch: epoch, over: transport)
        }
        try await authenticate(&authenticated, with: credential, by: authenticator)
        let (body, response) = try await send(&authenticated, with: credential, by: authenticator, over: transport)
        guard Self.isRejection(response, of: authenticated, by: authenticator) else {
            return (body, response)
        }
        return try await retry(authenticated, carrying: credential, sentAtEpoch: epoch, over: transport)
    }

    /// The credential to send in place of `stale`, which `transport` cannot carry (it is bound to
    /// a client certificate the transport no longer presents): `stale` refreshed over the
    /// transport's certificate, the refresh shared like any other, before anything is sent.
    ///
    /// - Throws: ``AuthenticationError/Code/certificateMismatch`` when the refreshed credential
    ///   cannot go over `transport` either; the refresh's error when it fails.
    private nonisolated func credentialForCurrentCertificate(
        of request: URLRequest,
        replacing stale: Credential,
        by authenticator: A,
        sentAtEpoch epoch: UInt64,
        over transport: any HTTPTransport
    ) async throws -> (A, Credential) {
        var carrying = request
        authenticator.apply(stale, to: &carrying)
        let (current, fresh) = try await credentialForRetry(of: carrying, carrying: stale, sentAtEpoch: epoch)
        guard try current.canSend(fresh, over: transport) else {
            throw AuthenticationError(
                code: .certificateMismatch,
                message: "The token for \(request.url?.redactedForDisplay ?? "the request") is bound to another client "
                    + "certificate than the transport presents, even after a refresh; nothing was sent. Send "
                    + "requests through a transport with the same client identity as the token endpoint's."
            )
        }
        return (current, fresh)
    }

    /// Sends `request`, and once more with `credential` applied afresh when the authenticator asks
    /// (a DPoP nonce); `request` becomes what was sent last. Not a refresh: never more than twice.
    private nonisolated func send(
        _ request: inout URLRequest,
        with credential: Credential,
        by authenticator: A,
        over transport: any HTTPTransport
    ) async throws -> (Data, ResponseHead) {
        let (body, response) = try await sendFollowingRedirects(
            &request, with: credential, by: authenticator, over: transport)
        guard authenticator.shouldResend(request, after: response) else { return (body, response) }
        try Task.checkCancellation()
        try await authenticate(&request, with: credential, by: authenticator)
        let resent = try await sendFollowingRedirects(&request, with: credential, by: authenticator, over: transport)
        _ = authenticator.shouldResend(request, after: resent.1)  // remembers what the server said; no third try
        return resent
    }

    /// The most redirects the engine follows for one authenticated request.
    static var maximumRedirects: Int { 10 }

    /// Sends `request` without letting the transport follow a redirect, and follows each one
    /// itself: with the credential (applied afresh, so a DPoP proof names the new URL) only to a URL
    /// on the same origin that the authenticator accepts (inside its resource's boundary, compared
    /// as the server reads the path); anywhere else without any credential header, through the
    /// transport's own redirect rule. `request` becomes the last request sent with the credential.
    private nonisolated func sendFollowingRedirects(
        _ request: inout URLRequest,
        with credential: Credential,
        by authenticator: A,
        over transport: any HTTPTransport
    ) async throws -> (Data, ResponseHead) {
        var (body, response) = try await transport.send(request, options: Self.engineOptions)
        var hops = 0
        while let next = Self.redirect(of: request, by: response), hops < Self.maximumRedirects {
            hops += 1
            try Task.checkCancellation()
            guard let target = next.url, let from = request.url, Origin(target) == Origin(from),
                authenticator.canAuthenticate(target)
            else {
                await emit(.redirectLeftBoundary, url: next.url)
                return try await transport.send(next.removingCredentialHeaders())
            }
            var following = next.removingCredentialHeaders()
            try await authenticate(&following, with: credential, by: authenticator)
            request = following
            (body, response) = try await transport.send(request, options: Self.engineOptions)
        }
        return (body, response)
    }

    /// Redirects are followed by the engine (``sendFollowingRedirects``), not the transport.
    private static var engineOptions: HTTPTransportOptions { HTTPTransportOptions(followsRedirects: false) }

    /// The request a `3xx` reply with a `Location` asks for, as browsers and `URLSession` make it:
    /// `303`, and `301`/`302` after a `POST`, become a `GET` without a body; `307` and `308` keep
    /// the method and body. `nil` for any other reply.
    nonisolated static func redirect(of request: URLRequest, by response: ResponseHead) -> URLRequest? {
        guard [301, 302, 303, 307, 308].contains(response.statusCode),
            let location = response.value(forHTTPHeaderField: "Location"),
            let base = response.url ?? request.url,
            let target = URL(string: location, relativeTo: base)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), scheme == "https" || scheme == "http"
        else { return nil }
        var next = request
        next.url = target
        let method = request.httpMethod?.uppercased() ?? "GET"
        if response.statusCode == 303 && method != "HEAD"
            || [301, 302].contains(response.statusCode) && method == "POST"
        {
            next.httpMethod = "GET"
            next.httpBody = nil
            next.setValue(nil, forHTTPHeaderField: "Content-Type")
            next.setValue(nil, forHTTPHeaderField: "Content-Length")
        }
        return next
    }

    /// Whether `authenticator` classifies `response` to `request` as a rejected credential. A
    /// success (`2xx`) never is, and the authenticator is not asked: there is no failure to show it.
    nonisolated static func isRejection(_ response: ResponseHead, of request: URLRequest, by authenticator: A)
        -> Bool
    {
        guard !(200...299).contains(response.statusCode) else { return false }
        let failure = ResourceError(
            code: .unacceptableStatus, method: request.httpMethod ?? "GET", url: request.url, response: response)
        return authenticator.didRequest(request, with: response, failDueToAuthenticationError: failure)
    }

    /// Sends `rejected` again, once, with the current credential: refreshed, or newer than the
    /// one the server rejected. Applying it replaces the rejected one's header.
    ///
    /// Alamofire's interceptor retries as often as its retrier says; this one retries exactly
    /// once, so a server that rejects every credential costs one refresh per request, not a loop.
    ///
    /// When the retry is rejected too and its credential had expired by the time the answer came
    /// (a token that lived seconds on a loaded machine), the caller gets
    /// ``AuthenticationError/Code/expiredInFlight`` instead of a bare `401`.
    private nonisolated func retry(
        _ rejected: URLRequest,
        carrying sent: Credential,
        sentAtEpoch epoch: UInt64,
        over transport: any HTTPTransport
    ) async throws -> (Data, ResponseHead) {
        let (authenticator, credential) = try await credentialForRetry(of: rejected, carrying: sent, sentAtEpoch: epoch)
        try Task.checkCancellation()
        var request = rejected
        try await authenticate(&request, with: credential, by: authenticator)
        await emit(.requestRetried, url: rejected.url)
        let (body, response) = try await send(&request, with: credential, by: authenticator, over: transport)
        guard Self.isRejection(response, of: request, by: authenticator) else { return (body, response) }
        if credential.requiresRefresh(now: configuration.clock.now, leeway: 0) {
            throw AuthenticationError(
                code: .expiredInFlight,
                message: "\(request.url?.redactedForDisplay ?? "The resource") rejected the retried request, and its "
                    + "credential had expired by the time the answer came: the request or the machine is too slow "
                    + "for the credential's lifetime."
            )
        }
        if let error = authenticator.errorForRejectedRetry(request, response: response) { throw error }
        return (body, response)
    }

    nonisolated func authenticate(
        _ request: inout URLRequest,
        with credential: Credential,
        by authenticator: A
    ) async throws {
        try Self.checkBoundary(of: request, by: authenticator)
        guard let url = request.url, configuration.allowsInsecureHTTP || url.isSafeForSecrets else {
            throw AuthenticationError(
                code: .insecureTransport,
                message:
                    "Refusing to send a credential to \(request.url?.redactedForDisplay ?? "a request without URL"): "
                    + "use https, a loopback address, or set allowsInsecureHTTP."
            )
        }
        try await authenticator.authorize(&request, with: credential)
    }

    /// Throws ``AuthenticationError/Code/foreignResource`` when `authenticator` may not apply its
    /// credential to `request`'s URL.
    nonisolated static func checkBoundary(of request: URLRequest, by authenticator: A) throws {
        guard let url = request.url, !authenticator.canAuthenticate(url) else { return }
        throw AuthenticationError(
            code: .foreignResource,
            message: "Refusing to send a credential to \(url.redactedForDisplay): it was issued for another "
                + "resource; nothing was sent. Sign in to that resource with an authenticator of its own."
        )
    }

    // MARK: - Events

    func emit(_ kind: AuthenticationEvent.Kind, url: URL? = nil, error: (any Error)? = nil) {
        switch kind {
        case .credentialObtained, .credentialLoaded, .credentialRefreshed: setSessionState(.signedIn)
        case .credentialCleared: setSessionState(.signedOut)
        default: break
        }
        guard !observers.isEmpty else { return }
        let event = AuthenticationEvent(kind, date: configuration.clock.now, url: url, error: error)
        for continuation in observers.values { continuation.yield(event) }
    }

    private func removeObserver(_ id: UUID) {
        observers[id] = nil
    }

    static var missingCredential: AuthenticationError {
        AuthenticationError(
            code: .missingCredential,
            message: "No credential and no way to obtain one: configure a flow or sign in first."
        )
    }

    /// The error when there is no authenticator (no flow), saying what is missing.
    static func missingAuthenticator(hasCredential: Bool) -> AuthenticationError {
        guard hasCredential else {
            return AuthenticationError(
                code: .missingCredential,
                message: "No credential and no flow: call configure(with:) with a flow, or sign in first."
            )
        }
        return AuthenticationError(
            code: .missingCredential,
            message: "A credential is set but no flow is configured, so nothing can apply or refresh it: "
                + "call configure(with:) with the flow that issued it (its refresh path)."
        )
    }
}

extension AuthenticationInterceptor: SecretHolding {
    /// The secrets of the current credential and of the ones it replaced.
    package nonisolated func secretsInPlay() -> [String] {
        state.withLock { state in
            (state.credential?.secretValues ?? []) + state.supersededSecrets.values
        }
    }
}

/// What knows the secrets of the credentials it applies, so that error text built from a response
/// to a request it authenticated can leave them out.
package protocol SecretHolding: Sendable {
    /// The secret values of the credentials in play (the current one and those it replaced).
    func secretsInPlay() -> [String]
}

extension AuthenticationInterceptor.Configuration {
    /// The transport, clock and policy of this configuration, for requests to the authorization
    /// server (refreshes, discovery, registration).
    package var context: AuthenticationContext {
        AuthenticationContext(
            transport: tokenTransport,
            clock: clock,
            allowsInsecureHTTP: allowsInsecureHTTP,
            timeout: authorizationServerTimeout,
            proofOfPossession: proofOfPossession
        )
    }
}
