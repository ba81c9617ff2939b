import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Passed to `didRequest` for a successful response, so the hot path allocates no error.
private let noAuthenticationFailure: any Error = ResourceError(code: .unacceptableStatus)

/// The authenticator actor: holds the current credential of one ``Authenticator`` and runs its
/// lifecycle for every request.
///
/// For each request it:
/// 1. fails with ``AuthenticationError/Code/missingCredential`` when there is no credential and
///    no way to get one, before anything is sent;
/// 2. refreshes a credential that expires within ``Configuration/leeway`` before sending;
/// 3. after a response the authenticator classifies as an authentication failure, refreshes once
///    and retries once, never more;
/// 4. retries without a refresh when the rejected request carried an older credential than the
///    current one;
/// 5. shares one refresh among all concurrent callers; a caller's cancellation does not cancel it;
/// 6. fails every waiter with the refresh's error, clearing the credential when the authenticator
///    says the grant is dead and keeping it otherwise;
/// 7. stops refresh loops with ``AuthenticationError/Code/excessiveRefresh``;
/// 8. writes every change of credential to the ``TokenStore``.
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
        /// The transport for the authorization server (refreshes), ``URLSessionTransport/shared``
        /// unless given.
        public var tokenTransport: any HTTPTransport
        /// Whether credentials may go over plain `http` to non-loopback hosts; `false` unless given.
        public var allowsInsecureHTTP: Bool

        /// Creates a configuration.
        public init(
            leeway: TimeInterval = 60,
            refreshLimit: RefreshLimit = RefreshLimit(),
            clock: any WallClock = SystemWallClock(),
            tokenTransport: any HTTPTransport = URLSessionTransport.shared,
            allowsInsecureHTTP: Bool = false
        ) {
            self.leeway = leeway
            self.refreshLimit = refreshLimit
            self.clock = clock
            self.tokenTransport = tokenTransport
            self.allowsInsecureHTTP = allowsInsecureHTTP
        }
    }

    /// The configuration given at creation.
    public nonisolated let configuration: Configuration

    private let store: (any TokenStore)?
    private var storeKey: String?
    private var authenticator: A?
    private var credential: Credential?
    /// Whether the store may hold a credential not yet read.
    private var needsStoreLoad: Bool
    /// Whether the credential given at creation is not yet saved (an initializer cannot await).
    private var needsInitialSave: Bool
    /// Bumped on every change of credential or authenticator; a refresh that started under an
    /// older generation does not overwrite newer state.
    private var generation: UInt64 = 0
    private var refreshTask: Task<Credential, any Error>?
    private var refreshHistory = RefreshHistory()

    /// What a request needs, published by the actor after every change of state (the actor is the
    /// only writer), so the common case (a valid credential, or a refresh to wait for) is read
    /// under a lock without a hop to the actor and without queuing behind other callers.
    private struct Snapshot: Sendable {
        var authenticator: A?
        var credential: Credential?
        var refreshTask: Task<Credential, any Error>?
        /// The store was read and the initial credential saved: nothing is left to do on the actor.
        var isSettled = false
    }
    private nonisolated let snapshot = Locked(Snapshot())

    /// A credential now, or the shared refresh that will produce one.
    private enum Pending: Sendable {
        case ready(A, Credential)
        case waiting(A, Task<Credential, any Error>)
    }
    private var observers: [UUID: AsyncStream<AuthenticationEvent>.Continuation] = [:]

    /// The transport, clock and policy that refreshes use; also for calls such as revocation.
    public nonisolated var context: AuthenticationContext {
        AuthenticationContext(
            transport: configuration.tokenTransport,
            clock: configuration.clock,
            allowsInsecureHTTP: configuration.allowsInsecureHTTP
        )
    }

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
        self.authenticator = authenticator
        self.credential = credential
        self.store = store
        self.storeKey = storeKey
        self.configuration = configuration
        let needsStoreLoad = credential == nil && store != nil && storeKey != nil
        let needsInitialSave = credential != nil && store != nil && storeKey != nil
        self.needsStoreLoad = needsStoreLoad
        self.needsInitialSave = needsInitialSave
        let state = Snapshot(
            authenticator: authenticator,
            credential: credential,
            refreshTask: nil,
            isSettled: !needsStoreLoad && !needsInitialSave
        )
        snapshot.withLock { $0 = state }
    }

    // MARK: - Configuration and state

    /// Switches to `authenticator`, dropping the previous one's credential from memory.
    ///
    /// With a `credential`, it becomes current and is saved to the store. Without one, the
    /// credential is read from the store entry `storeKey` on first use, or obtained through
    /// ``Authenticator/initialCredential(for:)``.
    public func configure(with authenticator: A, credential: Credential? = nil, storeKey: String? = nil) async {
        self.authenticator = authenticator
        if let storeKey { self.storeKey = storeKey }
        generation &+= 1
        refreshTask = nil
        needsInitialSave = false
        self.credential = credential
        needsStoreLoad = credential == nil && store != nil && self.storeKey != nil
        publish()
        if let credential {
            await save(credential)
            emit(.credentialObtained)
        }
    }

    /// The current credential, read from the store if not yet loaded; `nil` when there is none.
    /// Does not refresh.
    public func currentCredential() async throws -> Credential? {
        try await loadFromStoreIfNeeded()
        return credential
    }

    /// A credential valid for a request now: the current one, refreshed or obtained as needed.
    public nonisolated func validCredential() async throws -> Credential {
        try await credentialForRequest().credential
    }

    /// Replaces the current credential, e.g. after a sign-in done elsewhere; saved to the store.
    public func setCredential(_ credential: Credential) async {
        generation &+= 1
        refreshTask = nil
        needsStoreLoad = false
        needsInitialSave = false
        self.credential = credential
        publish()
        await save(credential)
        emit(.credentialObtained)
    }

    /// Forgets the credential, in memory and in the store (sign-out).
    public func clearCredential() async {
        generation &+= 1
        refreshTask = nil
        needsStoreLoad = false
        needsInitialSave = false
        credential = nil
        publish()
        await removeFromStore()
        emit(.credentialCleared)
    }

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

    // MARK: - Sending

    /// Applies the credential, sends `request` over `transport`, and on an authentication failure
    /// refreshes once and retries once.
    public nonisolated func send(
        _ request: consuming URLRequest,
        over transport: any HTTPTransport
    ) async throws -> (Data, HTTPURLResponse) {
        let (authenticator, credential) = try await credentialForRequest()
        try Task.checkCancellation()
        var authenticated = request
        try authenticate(&authenticated, with: credential, by: authenticator)
        let (body, response) = try await transport.send(authenticated)

        let failure: any Error =
            (200...399).contains(response.statusCode)
            ? noAuthenticationFailure : ResourceError(code: .unacceptableStatus, response: response)
        guard authenticator.didRequest(authenticated, with: response, failDueToAuthenticationError: failure)
        else {
            return (body, response)
        }
        let (retryAuthenticator, retryCredential) = try await credentialForRetry(of: authenticated)
        try Task.checkCancellation()
        // Applying the current credential replaces the rejected one's header.
        try authenticate(&authenticated, with: retryCredential, by: retryAuthenticator)
        return try await transport.send(authenticated)
    }

    private nonisolated func authenticate(
        _ request: inout URLRequest,
        with credential: Credential,
        by authenticator: A
    ) throws {
        guard let url = request.url, configuration.allowsInsecureHTTP || url.isSafeForSecrets else {
            throw AuthenticationError(
                code: .insecureTransport,
                message:
                    "Refusing to send a credential to \(request.url?.redactedForDisplay ?? "a request without URL"): "
                    + "use https, a loopback address, or set allowsInsecureHTTP."
            )
        }
        authenticator.apply(credential, to: &request)
    }

    // MARK: - The lifecycle

    /// The credential for a request: from the snapshot when it is valid or a refresh is under
    /// way, otherwise from the actor. A shared refresh is awaited here, off the actor, so its many
    /// waiters resume in parallel instead of one by one on the actor.
    private nonisolated func credentialForRequest() async throws -> (authenticator: A, credential: Credential) {
        let state = snapshot.withLock { $0 }
        if state.isSettled, let authenticator = state.authenticator {
            if let task = state.refreshTask { return (authenticator, try await task.value) }
            if let credential = state.credential,
                !credential.requiresRefresh(at: configuration.clock.now.addingTimeInterval(configuration.leeway))
            {
                return (authenticator, credential)
            }
        }
        return try await resolve(pendingCredential())
    }

    private nonisolated func resolve(_ pending: Pending) async throws -> (authenticator: A, credential: Credential) {
        switch pending {
        case .ready(let authenticator, let credential): return (authenticator, credential)
        case .waiting(let authenticator, let task): return (authenticator, try await task.value)
        }
    }

    private func pendingCredential() async throws -> Pending {
        try await loadFromStoreIfNeeded()
        guard let authenticator else { throw Self.missingCredential }
        if let refreshTask { return .waiting(authenticator, refreshTask) }
        if let credential {
            let horizon = configuration.clock.now.addingTimeInterval(configuration.leeway)
            guard credential.requiresRefresh(at: horizon) else { return .ready(authenticator, credential) }
        }
        return .waiting(authenticator, try startRefresh(from: credential, by: authenticator))
    }

    private nonisolated func credentialForRetry(of rejected: URLRequest) async throws -> (A, Credential) {
        try await resolve(pendingRetryCredential(of: rejected))
    }

    private func pendingRetryCredential(of rejected: URLRequest) throws -> Pending {
        guard let authenticator else { throw Self.missingCredential }
        emit(.requestRetried, url: rejected.url)
        if let refreshTask { return .waiting(authenticator, refreshTask) }
        if let credential, !authenticator.isRequest(rejected, authenticatedWith: credential) {
            return .ready(authenticator, credential)
        }
        return .waiting(authenticator, try startRefresh(from: credential, by: authenticator))
    }

    /// Starts the one shared refresh (or first obtain, when `stale` is `nil`), or returns the one
    /// under way.
    private func startRefresh(from stale: Credential?, by authenticator: A) throws -> Task<Credential, any Error> {
        if let refreshTask { return refreshTask }
        guard refreshHistory.record(at: configuration.clock.now, within: configuration.refreshLimit) else {
            let error = AuthenticationError(
                code: .excessiveRefresh,
                message: "More than \(configuration.refreshLimit.maximumCount) refreshes within "
                    + "\(Int(configuration.refreshLimit.window)) seconds; not refreshing again."
            )
            emit(.refreshFailed, error: error)
            throw error
        }
        let task = makeRefreshTask(from: stale, by: authenticator, startedGeneration: generation)
        refreshTask = task
        publish()
        return task
    }

    /// The shared refresh: an unstructured task, so cancelling any one waiter does not cancel it.
    /// Created outside the actor, it starts on the global executor instead of queuing behind the
    /// callers waiting on the actor, and comes back to the actor only to record its result.
    private nonisolated func makeRefreshTask(
        from stale: Credential?,
        by authenticator: A,
        startedGeneration: UInt64
    ) -> Task<Credential, any Error> {
        let context = self.context
        return Task {
            let result: Result<Credential, any Error>
            do {
                if let stale {
                    result = .success(try await authenticator.refresh(stale, for: context))
                } else if let obtained = try await authenticator.initialCredential(for: context) {
                    result = .success(obtained)
                } else {
                    result = .failure(Self.missingCredential)
                }
            } catch {
                result = .failure(error)
            }
            return try await self.finishRefresh(
                result,
                obtained: stale == nil,
                startedGeneration: startedGeneration,
                authenticator: authenticator
            )
        }
    }

    private func finishRefresh(
        _ result: Result<Credential, any Error>,
        obtained: Bool,
        startedGeneration: UInt64,
        authenticator: A
    ) async throws -> Credential {
        // A reconfiguration while the refresh ran: its result belongs to nobody's state.
        let isCurrent = startedGeneration == generation
        if isCurrent {
            refreshTask = nil
            publish()
        }
        switch result {
        case .success(let fresh):
            guard isCurrent else { return fresh }
            credential = fresh
            generation &+= 1
            publish()
            await save(fresh)
            emit(obtained ? .credentialObtained : .credentialRefreshed)
            return fresh
        case .failure(let error as AuthenticationError) where error.code == .missingCredential:
            throw error
        case .failure(let error):
            if isCurrent, authenticator.isCredentialInvalidated(by: error) {
                credential = nil
                generation &+= 1
                publish()
                await removeFromStore()
                emit(.refreshFailed, error: error)
                emit(.credentialCleared)
                throw AuthenticationError(
                    code: .reauthenticationRequired,
                    message: "The authorization server rejected the grant; sign in again.",
                    underlyingError: error
                )
            }
            emit(.refreshFailed, error: error)
            if error is CancellationError { throw error }
            throw AuthenticationError(
                code: .refreshFailed,
                message: obtained
                    ? "Could not obtain a credential; nothing was stored."
                    : "Could not refresh the credential; it was kept.",
                underlyingError: error
            )
        }
    }

    private static var missingCredential: AuthenticationError {
        AuthenticationError(
            code: .missingCredential,
            message: "No credential and no way to obtain one: configure a flow or sign in first."
        )
    }

    // MARK: - Store

    private func loadFromStoreIfNeeded() async throws {
        if needsInitialSave, let credential {
            needsInitialSave = false
            await save(credential)
        }
        guard needsStoreLoad, let store, let storeKey else {
            publish()
            return
        }
        let startedGeneration = generation
        let data: Data?
        do {
            data = try await store.load(forKey: storeKey)
        } catch {
            throw AuthenticationError(
                code: .storeFailed,
                message: "Could not read the stored credential '\(storeKey)'; it was left as is.",
                underlyingError: error
            )
        }
        guard needsStoreLoad, startedGeneration == generation else { return }
        guard let data else {
            needsStoreLoad = false
            publish()
            return
        }
        do {
            credential = try JSONDecoder().decode(Credential.self, from: data)
        } catch {
            throw AuthenticationError(
                code: .storeFailed,
                message: "The stored credential '\(storeKey)' is corrupt; it was left as is. "
                    + "Remove it (clearCredential()) to sign in again.",
                underlyingError: TokenStoreError(code: .corrupt, key: storeKey, underlyingError: error)
            )
        }
        needsStoreLoad = false
        generation &+= 1
        publish()
        emit(.credentialLoaded)
    }

    private func save(_ credential: Credential) async {
        guard let store, let storeKey else { return }
        do {
            try await store.save(try JSONEncoder().encode(credential), forKey: storeKey)
        } catch {
            emit(.storeFailed, error: error)
        }
    }

    private func removeFromStore() async {
        guard let store, let storeKey else { return }
        do {
            try await store.removeValue(forKey: storeKey)
        } catch {
            emit(.storeFailed, error: error)
        }
    }

    /// Copies the state the hot path reads into the snapshot; called after every change.
    private func publish() {
        let state = Snapshot(
            authenticator: authenticator,
            credential: credential,
            refreshTask: refreshTask,
            isSettled: !needsStoreLoad && !needsInitialSave
        )
        snapshot.withLock { $0 = state }
    }

    // MARK: - Events

    private func emit(_ kind: AuthenticationEvent.Kind, url: URL? = nil, error: (any Error)? = nil) {
        guard !observers.isEmpty else { return }
        let event = AuthenticationEvent(kind, date: configuration.clock.now, url: url, error: error)
        for continuation in observers.values { continuation.yield(event) }
    }

    private func removeObserver(_ id: UUID) {
        observers[id] = nil
    }
}
