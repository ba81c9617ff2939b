import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The lifecycle: which credential a request uses, the one shared refresh, and committing its
// result. Contract points 1 to 7 of the type's documentation live here.
extension AuthenticationInterceptor {
    /// The current credential when a request can use it right away: the path of almost every
    /// request. Synchronous on purpose, so the common case allocates no async frame and never
    /// suspends; `nil` sends the request to ``credentialForRequest()``.
    nonisolated func readyCredential() -> (authenticator: A, credential: Credential, epoch: UInt64)? {
        let now = configuration.clock.now
        let leeway = configuration.leeway
        return state.withLock { state in
            guard state.isSettled, state.refresh == nil, let authenticator = state.authenticator,
                let credential = state.credential, !credential.requiresRefresh(now: now, leeway: leeway)
            else { return nil }
            return (authenticator, credential, state.refreshEpoch)
        }
    }

    /// How many times a request may go round the decision loop: a refreshed credential that
    /// still needs a refresh goes round again, and each round counts against the refresh limit,
    /// so the loop ends in ``AuthenticationError/Code/excessiveRefresh`` at the latest here.
    private nonisolated var maximumRounds: Int {
        Swift.min(Swift.max(configuration.refreshLimit.maximumCount, 0), 1_000) + 3
    }

    /// The credential for a request: ready, after the shared refresh, or after the actor has read
    /// the store. Only the last case touches the actor.
    ///
    /// A refreshed credential that has already expired (a server that issues expired tokens) is
    /// not sent and not refreshed for again: the request fails with
    /// ``AuthenticationError/Code/expiredInFlight``. One that is merely within the leeway is sent.
    nonisolated func credentialForRequest() async throws -> (
        authenticator: A, credential: Credential, epoch: UInt64
    ) {
        for _ in 0..<maximumRounds {
            let now = configuration.clock.now
            let leeway = configuration.leeway
            let decision = state.withLock { state -> CredentialDecision<A> in
                guard state.isSettled else { return .settle }
                guard let authenticator = state.authenticator else {
                    return .fail(Self.missingAuthenticator(hasCredential: state.credential != nil))
                }
                if let refresh = state.refresh { return .wait(authenticator, refresh) }
                if let credential = state.credential, !credential.requiresRefresh(now: now, leeway: leeway) {
                    return .ready(authenticator, credential)
                }
                return startRefresh(&state, from: state.credential, by: authenticator, at: now)
            }
            switch decision {
            case .settle:
                try await settle()
            case .ready(let authenticator, let credential):
                return (authenticator, credential, currentEpoch)
            case .wait(let authenticator, let refresh):
                let credential = try await refresh.value()
                try checkFreshEnough(credential)
                return (authenticator, credential, currentEpoch)
            case .fail(let error):
                try await fail(with: error)
            }
        }
        throw excessiveRefresh
    }

    /// A credential for which `isUsable` holds: the one a request would use, else the result of
    /// a refresh from it, shared as every refresh is (and coordinated through the store). A
    /// credential can be valid for requests and still unfit for another use: an OpenID session
    /// whose access token lives longer than its ID token, which a token exchange presents.
    ///
    /// Each such refresh counts against the ``RefreshLimit``, so a server whose refreshed
    /// credential never satisfies `isUsable` ends in ``AuthenticationError/Code/excessiveRefresh``.
    public nonisolated func validCredential(where isUsable: @Sendable (Credential) -> Bool) async throws
        -> Credential
    {
        for _ in 0..<maximumRounds {
            let (authenticator, credential, _) = try await credentialForRequest()
            if isUsable(credential) { return credential }
            let now = configuration.clock.now
            let decision = state.withLock { state -> CredentialDecision<A> in
                if let refresh = state.refresh { return .wait(authenticator, refresh) }
                guard let current = state.credential else { return .fail(Self.missingCredential) }
                if isUsable(current) { return .ready(authenticator, current) }
                return startRefresh(&state, from: current, by: authenticator, at: now)
            }
            switch decision {
            case .settle:
                try await settle()
            case .ready(_, let credential):
                return credential
            case .wait(_, let refresh):
                let credential = try await refresh.value()
                try checkFreshEnough(credential)
                if isUsable(credential) { return credential }
            case .fail(let error):
                try await fail(with: error)
            }
        }
        throw excessiveRefresh
    }

    /// The credential for retrying a request the server rejected.
    ///
    /// - The current one, without a refresh, when the request carried an older one
    ///   (``Authenticator/isRequest(_:authenticatedWith:)`` is `false` for the current one).
    /// - Otherwise the shared refresh's result, unless it carries the token the server just
    ///   rejected (``Authenticator/carriesSameToken(_:as:on:)``: the same access token with only
    ///   its expiry changed, say, for every kind of credential). Such a credential is not new: it is never sent again; another
    ///   refresh follows, each counting against the ``RefreshLimit``, so a server that keeps
    ///   returning the rejected token ends in ``AuthenticationError/Code/excessiveRefresh``.
    /// - The error of the refresh from the same credential that ended after the request was sent,
    ///   instead of a second refresh from a credential that already failed (Alamofire #3290).
    /// - ``AuthenticationError/Code/missingCredential`` when the credential was cleared (sign-out)
    ///   while the request was on its way.
    /// - ``AuthenticationError/Code/expiredInFlight`` when the refreshed credential had already
    ///   expired when it arrived.
    nonisolated func credentialForRetry(
        of rejected: URLRequest, carrying sent: Credential?, sentAtEpoch epoch: UInt64
    ) async throws -> (A, Credential) {
        for _ in 0..<maximumRounds {
            let now = configuration.clock.now
            let leeway = configuration.leeway
            let decision = state.withLock { state -> CredentialDecision<A> in
                guard let authenticator = state.authenticator else {
                    return .fail(Self.missingAuthenticator(hasCredential: state.credential != nil))
                }
                let carriesCurrent = state.credential.map { authenticator.isRequest(rejected, authenticatedWith: $0) }
                if let failure = state.lastFailure, failure.epoch > epoch, carriesCurrent ?? true {
                    return .fail(failure.error)
                }
                if let refresh = state.refresh { return .wait(authenticator, refresh) }
                guard let credential = state.credential, let carriesCurrent else {
                    return .fail(Self.missingCredential)
                }
                if !carriesCurrent, !credential.requiresRefresh(now: now, leeway: leeway) {
                    return .ready(authenticator, credential)
                }
                return startRefresh(&state, from: credential, by: authenticator, at: now)
            }
            switch decision {
            case .settle:
                try await settle()
            case .ready(let authenticator, let credential):
                return (authenticator, credential)
            case .wait(let authenticator, let refresh):
                let credential = try await refresh.value()
                // Not a new credential: refresh again (the limit ends a server that insists).
                if let sent, authenticator.carriesSameToken(credential, as: sent, on: rejected) { continue }
                try checkFreshEnough(credential)
                return (authenticator, credential)
            case .fail(let error):
                try await fail(with: error)
            }
        }
        throw excessiveRefresh
    }

    nonisolated var currentEpoch: UInt64 { state.withLock { $0.refreshEpoch } }

    /// Throws ``AuthenticationError/Code/expiredInFlight`` when `credential`, just handed over by a
    /// refresh, has already expired: the request would reach the server with it. One that is
    /// merely within the leeway is sent: a 4-second token from a server slow on a loaded machine
    /// arrives that way and is still accepted (a CI run showed it), and refreshing again would
    /// only loop.
    private nonisolated func checkFreshEnough(_ credential: Credential) throws {
        guard credential.requiresRefresh(now: configuration.clock.now, leeway: 0) else { return }
        throw AuthenticationError(
            code: .expiredInFlight,
            message: "The credential refreshed for this request had expired before the request could be sent: "
                + "the machine or the token store is too slow for the credential's lifetime."
        )
    }

    /// Whether two credentials are stored alike (their canonical encodings are equal), since
    /// credentials need not be `Equatable`.
    package nonisolated static func sameStoredForm(_ lhs: Credential, _ rhs: Credential) -> Bool {
        guard let left = try? canonicalData(lhs), let right = try? canonicalData(rhs) else { return false }
        return left == right
    }

    private nonisolated func fail(with error: any Error) async throws -> Never {
        if let error = error as? AuthenticationError, error.code == .excessiveRefresh {
            await emit(.refreshFailed, error: error)
        }
        throw error
    }

    private nonisolated var excessiveRefresh: AuthenticationError {
        let limit = configuration.refreshLimit
        return AuthenticationError(
            code: .excessiveRefresh,
            message: "More than \(limit.maximumCount) refreshes within \(limit.window.formattedSeconds) seconds; "
                + "not refreshing again."
        )
    }

    /// Elects the refresh: called under the state lock by the first caller that needs one.
    ///
    /// Refused while the server's `Retry-After` lasts, and when the server already answered as
    /// many refreshes as the limit allows within its window. Obtaining a first credential
    /// (`stale == nil`) is not a refresh and is not limited.
    private nonisolated func startRefresh(
        _ state: inout CredentialState<A>,
        from stale: Credential?,
        by authenticator: A,
        at now: Date
    ) -> CredentialDecision<A> {
        if let backoff = state.backoff, now < backoff.until {
            return .fail(backoff.error)
        }
        if stale != nil, state.refreshHistory.isExhausted(at: now, within: configuration.refreshLimit) {
            return .fail(excessiveRefresh)
        }
        let refresh = startSharedRefresh(
            from: stale, by: authenticator, storeKey: state.storeKey, startedGeneration: state.generation)
        state.refresh = refresh
        return .wait(authenticator, refresh)
    }

    /// Starts the shared refresh in an unstructured task, so cancelling any one waiter does not
    /// cancel it. It runs on the global executor and comes to the actor only to commit its
    /// result; its waiters resume once the result is committed.
    ///
    /// The task runs at high priority: every waiting request depends on it, and waiting on
    /// continuations does not raise its priority the way awaiting a task's value does. With
    /// 10,000 requests queued at the default priority, the 50 ms endpoint of the coalesced
    /// benchmark returned after 96 ms at inherited priority and after 57 ms at high.
    private nonisolated func startSharedRefresh(
        from stale: Credential?,
        by authenticator: A,
        storeKey: String?,
        startedGeneration: UInt64
    ) -> SharedRefresh<Credential> {
        let shared = SharedRefresh<Credential>()
        Task(priority: .high) {
            let result: Result<RefreshProduct, any Error>
            do {
                result = .success(try await self.performRefresh(from: stale, by: authenticator, storeKey: storeKey))
            } catch {
                result = .failure(error)
            }
            let committed: Result<Credential, any Error>
            do {
                committed = .success(
                    try await self.commitRefresh(
                        result,
                        obtained: stale == nil,
                        startedGeneration: startedGeneration,
                        authenticator: authenticator
                    )
                )
            } catch {
                committed = .failure(error)
            }
            shared.finish(with: committed)
        }
        return shared
    }

    /// Records the refresh's outcome; its waiters resume once the store has it.
    ///
    /// When the credential changed while the refresh ran (a sign-out, ``setCredential(_:)``), the
    /// refresh's result belongs to nobody: it is neither stored nor handed to the waiters, who get
    /// the current credential, or ``AuthenticationError/Code/missingCredential`` after a sign-out.
    private func commitRefresh(
        _ product: Result<RefreshProduct, any Error>,
        obtained: Bool,
        startedGeneration: UInt64,
        authenticator: A
    ) async throws -> Credential {
        let now = configuration.clock.now
        let result = product.map(\.credential)
        let isStored = (try? product.get().isStored) ?? false
        let source = (try? product.get().source) ?? .refreshed
        let storeHandledFailure = store != nil && storeKey != nil && !obtained
        var failure: (error: any Error, committed: any Error, invalidated: Bool)?
        if case .failure(let error) = result {
            let invalidated = authenticator.isCredentialInvalidated(by: error)
            failure = (
                error, Self.committedError(for: error, obtained: obtained, invalidated: invalidated), invalidated
            )
        }
        let answered = failure.map { !Self.isConnectivityFailure($0.error) } ?? true
        let superseded = state.withLock { state -> (current: Credential?, isSuperseded: Bool) in
            guard state.generation == startedGeneration else { return (state.credential, true) }
            state.refresh = nil
            state.refreshEpoch &+= 1
            if answered, !obtained, source != .adopted { state.refreshHistory.record(at: now) }
            switch result {
            case .success(let fresh):
                state.credential = fresh
                state.generation &+= 1
                state.lastFailure = nil
                state.backoff = nil
            case .failure:
                guard let failure else { break }
                if failure.invalidated {
                    state.credential = nil
                    state.generation &+= 1
                }
                state.lastFailure = RefreshFailure(epoch: state.refreshEpoch, error: failure.committed)
                if let until = (failure.error as? any RetryAfterError)?.retryAfter, until > now {
                    state.backoff = Backoff(until: until, error: failure.committed)
                }
            }
            return (nil, false)
        }
        if superseded.isSuperseded {
            let leeway = configuration.leeway
            guard let current = superseded.current, !current.requiresRefresh(now: now, leeway: leeway) else {
                throw AuthenticationError(
                    code: .missingCredential,
                    message: "The credential was cleared while it was being refreshed; sign in again."
                )
            }
            return current
        }
        switch result {
        case .success(let fresh):
            if !isStored { await save(fresh) }
            switch source {
            case .adopted: emit(.credentialLoaded)
            case .obtained: emit(.credentialObtained)
            case .refreshed: emit(.credentialRefreshed)
            }
            return fresh
        case .failure(let error):
            guard let failure else { throw error }
            if (failure.committed as? AuthenticationError)?.code != .missingCredential {
                emit(.refreshFailed, error: failure.committed)
            }
            if failure.invalidated {
                // A coordinated refresh cleared the entry itself, and only if it still held the
                // rejected credential.
                if !storeHandledFailure { await removeFromStore() }
                emit(.credentialCleared)
                setSessionState(.reauthenticationRequired)
            }
            if let unknown = failure.committed as? AuthenticationError, unknown.code == .refreshOutcomeUnknown {
                unknownRefreshOutcome = unknown.underlyingError as? UnknownRefreshOutcome
                setSessionState(.refreshOutcomeUnknown)
            }
            if obtained, sessionState == .signedOut, let missing = failure.committed as? AuthenticationError,
                missing.code == .missingCredential
            {
                // After a sign-out, say so, rather than why the old sign-in cannot be reused.
                throw AuthenticationError(
                    code: .missingCredential, message: "Signed out: sign in again to make requests.",
                    underlyingError: missing)
            }
            throw failure.committed
        }
    }

    /// The error every waiter of a failed refresh gets.
    private static func committedError(for error: any Error, obtained: Bool, invalidated: Bool) -> any Error {
        if let error = error as? AuthenticationError,
            [.missingCredential, .refreshOutcomeUnknown, .storeFailed].contains(error.code)
        {
            return error
        }
        if error is CancellationError || error is StepUpError { return error }
        if invalidated {
            return AuthenticationError(
                code: .reauthenticationRequired,
                message: "The authorization server rejected the grant; sign in again.",
                underlyingError: error
            )
        }
        if obtained {
            return AuthenticationError(
                code: .obtainFailed,
                message: "Could not obtain a credential; nothing was stored.",
                underlyingError: error
            )
        }
        return AuthenticationError(
            code: .refreshFailed,
            message: "Could not refresh the credential; it was kept.",
            underlyingError: error
        )
    }

    /// Whether `error` means the authorization server never answered (network down, timeout,
    /// cancelled): such a refresh does not count against the ``RefreshLimit``.
    static func isConnectivityFailure(_ error: any Error) -> Bool {
        switch error {
        case is URLError, is CancellationError, is POSIXError, is TokenStoreError: return true
        case let error as AuthenticationError: return error.code != .reauthenticationRequired
        case let error as HTTPTransportError: return error.isConnectivityFailure
        default: return false
        }
    }
}
