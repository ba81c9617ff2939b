import Foundation

// The refresh itself, and its coordination with other processes that share the token store
// (the algorithm of `TokenStore`'s documentation).
extension AuthenticationInterceptor {
    /// What a refresh produced.
    struct RefreshProduct: Sendable {
        enum Source: Sendable {
            /// Refreshed by the authenticator.
            case refreshed
            /// Obtained as a first credential.
            case obtained
            /// Found in the store: another process had refreshed or signed in already.
            case adopted
        }

        let credential: Credential
        let source: Source
        /// Whether the store already holds it (written under the lock, or read from it).
        let isStored: Bool
    }

    /// The store key of the in-flight record of `key`.
    static func inFlightKey(for key: String) -> String { key + "#refresh-in-flight" }

    /// The credential's JSON with sorted keys: the same credential always gives the same bytes, so
    /// entries can be compared across processes.
    static func canonicalData(_ credential: Credential) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(credential)
    }

    /// Refreshes `stale` (or obtains a first credential when it is `nil`), coordinated through the
    /// store when there is one.
    nonisolated func performRefresh(
        from stale: Credential?,
        by authenticator: A,
        storeKey: String?
    ) async throws -> RefreshProduct {
        let context = self.context
        guard let store, let key = storeKey else {
            if let stale {
                return RefreshProduct(
                    credential: try await authenticator.refresh(stale, for: context), source: .refreshed,
                    isStored: false)
            }
            guard let obtained = try await authenticator.initialCredential(for: context) else {
                throw Self.missingCredential
            }
            return RefreshProduct(credential: obtained, source: .obtained, isStored: false)
        }
        guard let stale else { return try await obtain(by: authenticator, store: store, key: key) }
        return try await store.withRefreshLock(
            forKey: key,
            timeout: configuration.storeLockTimeout,
            adoptingAfterWait: { try await self.adoptStored(over: stale, store: store, key: key) },
            { try await self.refreshLocked(stale, by: authenticator, store: store, key: key) }
        )
    }

    /// After another process's refresh: its stored result, if it is newer than `stale` and valid
    /// (step 2 of the algorithm, without the lock: it only reads).
    private nonisolated func adoptStored(over stale: Credential, store: any TokenStore, key: String) async throws
        -> RefreshProduct?
    {
        guard let entry = try await loadEntry(store, key), isUsable(entry),
            try Self.canonicalData(entry) != Self.canonicalData(stale)
        else { return nil }
        return RefreshProduct(credential: entry, source: .adopted, isStored: true)
    }

    /// A first credential: one another process stored meanwhile, or a new one. No lock unless the
    /// authenticator asks for one (``Authenticator/initialCredentialLockTimeout``): obtaining may
    /// wait for a person, and there is no refresh token to protect.
    private nonisolated func obtain(by authenticator: A, store: any TokenStore, key: String) async throws
        -> RefreshProduct
    {
        if let stored = try await loadEntry(store, key), isUsable(stored) {
            return RefreshProduct(credential: stored, source: .adopted, isStored: true)
        }
        guard store.coordinatesProcesses, let timeout = authenticator.initialCredentialLockTimeout else {
            guard let obtained = try await authenticator.initialCredential(for: context) else {
                throw Self.missingCredential
            }
            return RefreshProduct(credential: obtained, source: .obtained, isStored: false)
        }
        let waitStarted = configuration.clock.now
        return try await store.withRefreshLock(
            forKey: key,
            timeout: timeout,
            adoptingAfterWait: { try await self.adoptObtained(store: store, key: key, since: waitStarted) },
            { try await self.obtainLocked(by: authenticator, store: store, key: key, since: waitStarted) }
        )
    }

    static func refusalKey(for key: String) -> String { key + "#sign-in-refused" }

    /// After another process obtained a first credential under the lock: what it stored, or the
    /// server's refusal of it when that came after `since` (the user said no once, for everyone).
    private nonisolated func adoptObtained(store: any TokenStore, key: String, since: Date) async throws
        -> RefreshProduct?
    {
        if let stored = try await loadEntry(store, key), isUsable(stored) {
            return RefreshProduct(credential: stored, source: .adopted, isStored: true)
        }
        if let data = try await store.load(forKey: Self.refusalKey(for: key)),
            let refusal = try? JSONDecoder().decode(SignInRefusal.self, from: data),
            refusal.at >= since.timeIntervalSince1970
        {
            throw OAuthError(code: OAuthErrorCode(rawValue: refusal.code), errorDescription: refusal.description)
        }
        return nil
    }

    /// Obtains a first credential holding the lock, and stores it before the lock is released so
    /// that every process waiting adopts it.
    private nonisolated func obtainLocked(by authenticator: A, store: any TokenStore, key: String, since: Date)
        async throws -> RefreshProduct
    {
        if let adopted = try await adoptObtained(store: store, key: key, since: since) { return adopted }
        let obtained: Credential?
        do {
            obtained = try await authenticator.initialCredential(for: context)
        } catch let refusal as OAuthError {
            let record = SignInRefusal(
                code: refusal.code.rawValue, description: refusal.errorDescription,
                at: configuration.clock.now.timeIntervalSince1970)
            if let data = try? JSONEncoder().encode(record) {
                try? await store.save(data, forKey: Self.refusalKey(for: key))
            }
            throw refusal
        }
        guard let obtained else { throw Self.missingCredential }
        try? await store.removeValue(forKey: Self.refusalKey(for: key))
        do {
            try await store.save(try Self.canonicalData(obtained), forKey: key)
        } catch {
            await emit(.storeFailed, error: error)
        }
        return RefreshProduct(credential: obtained, source: .obtained, isStored: true)
    }

    /// Steps 2 to 5 of the algorithm, holding the lock.
    private nonisolated func refreshLocked(
        _ stale: Credential,
        by authenticator: A,
        store: any TokenStore,
        key: String
    ) async throws -> RefreshProduct {
        let entry = try await loadEntry(store, key)
        let entryData = try entry.map(Self.canonicalData)
        let inFlightKey = Self.inFlightKey(for: key)
        if store.coordinatesProcesses, let data = try await store.load(forKey: inFlightKey) {
            // We hold the lock, so whoever wrote the record is gone. If the entry still holds the
            // credential it refreshed from, the server may have spent that refresh token.
            let record = InFlightRecord.decode(data)
            if (record?.credential ?? data) == entryData, !isWithinReuseGracePeriod(record) {
                let outcome = UnknownRefreshOutcome(
                    storeKey: key, startedAt: record.map { Date(timeIntervalSince1970: $0.startedAt) },
                    holder: record?.holder)
                throw AuthenticationError(
                    code: .refreshOutcomeUnknown,
                    message: "A process died while it refreshed this credential (\(outcome)); its refresh token "
                        + "may be spent. Sign in again, or call resolveUnknownRefreshOutcome() if the server "
                        + "does not rotate refresh tokens.",
                    underlyingError: outcome
                )
            }
            // The writer stored its result after all, or the server still accepts the unrotated
            // refresh token: refresh from the stored credential.
            try await store.removeValue(forKey: inFlightKey)
        }
        if let entry, let entryData, entryData != (try Self.canonicalData(stale)), isUsable(entry) {
            return RefreshProduct(credential: entry, source: .adopted, isStored: true)
        }
        // Refresh from the newest credential there is: never send a refresh token older than the stored one.
        let base = entry ?? stale
        let baseData = try entryData ?? Self.canonicalData(base)
        if store.coordinatesProcesses {
            let record = InFlightRecord(
                credential: baseData, startedAt: configuration.clock.now.timeIntervalSince1970,
                holder: InFlightRecord.thisProcess)
            try await store.save(try JSONEncoder().encode(record), forKey: inFlightKey)
        }
        let fresh: Credential
        do {
            fresh = try await authenticator.refresh(base, for: context)
        } catch {
            // The server answered (or never got it): nothing is in flight any more. Removed while
            // the lock is held, so no other process mistakes it for a dead one's.
            if store.coordinatesProcesses { try? await store.removeValue(forKey: inFlightKey) }
            guard authenticator.isCredentialInvalidated(by: error) else { throw error }
            // Clear the entry only if it still holds the rejected credential.
            let current = try await store.load(forKey: key)
            if let current, let decoded = try? JSONDecoder().decode(Credential.self, from: current) {
                if try Self.canonicalData(decoded) == baseData {
                    try await store.removeValue(forKey: key)
                } else if isUsable(decoded) {
                    return RefreshProduct(credential: decoded, source: .adopted, isStored: true)
                }
            }
            throw error
        }
        // The fenced write: only over the credential this refresh started from (or into the empty
        // entry it started with); an entry cleared meanwhile (a sign-out) stays cleared.
        // Either way it is not written again outside the lock: a newer credential that is there
        // stays, and a failed write is reported.
        let current = try await loadEntry(store, key)
        if try current.map(Self.canonicalData) == entryData ?? baseData || (current == nil && entry == nil) {
            do {
                try await store.save(try Self.canonicalData(fresh), forKey: key)
            } catch {
                await emit(.storeFailed, error: error)
            }
        }
        if store.coordinatesProcesses { try? await store.removeValue(forKey: inFlightKey) }
        return RefreshProduct(credential: fresh, source: .refreshed, isStored: true)
    }

    /// The stored credential of `key`, if any; a corrupt entry is an error, never overwritten.
    private nonisolated func loadEntry(_ store: any TokenStore, _ key: String) async throws -> Credential? {
        guard let data = try await store.load(forKey: key) else { return nil }
        do {
            return try JSONDecoder().decode(Credential.self, from: data)
        } catch {
            throw AuthenticationError(
                code: .storeFailed,
                message: "The stored credential '\(key)' is corrupt; it was left as is. "
                    + "Remove it (clearCredential()) to sign in again.",
                underlyingError: TokenStoreError(code: .corrupt, key: key, underlyingError: error)
            )
        }
    }

    /// Whether a dead process's refresh started so recently that the server, by the
    /// ``Configuration/refreshTokenReuseGracePeriod`` the app configured, still accepts the
    /// refresh token it may have rotated. Never for a record without a start time.
    private nonisolated func isWithinReuseGracePeriod(_ record: InFlightRecord?) -> Bool {
        guard let grace = configuration.refreshTokenReuseGracePeriod, grace > 0, let record else { return false }
        let elapsed = configuration.clock.now.timeIntervalSince1970 - record.startedAt
        // A start in the future (another machine's clock ahead) is not trusted either way.
        return elapsed >= 0 && elapsed < grace
    }

    private nonisolated func isUsable(_ credential: Credential) -> Bool {
        !credential.requiresRefresh(now: configuration.clock.now, leeway: configuration.leeway)
    }

    /// Resolves an unknown refresh outcome (``AuthenticationError/Code/refreshOutcomeUnknown``),
    /// for every process and machine that shares the store: the operator's one call.
    ///
    /// - Parameter resolution: ``UnknownRefreshOutcomeResolution/retryWithStoredRefreshToken``
    ///   (the default) forgets the dead process's refresh, so the next request refreshes with the
    ///   stored refresh token again: right when the server does not rotate refresh tokens, or the
    ///   refresh never reached it. With rotation and reuse detection, a spent refresh token
    ///   revokes the whole grant. ``UnknownRefreshOutcomeResolution/requireSignIn`` clears the
    ///   session instead: every process then asks its user to sign in.
    public func resolveUnknownRefreshOutcome(
        _ resolution: UnknownRefreshOutcomeResolution = .retryWithStoredRefreshToken
    ) async throws {
        defer { unknownRefreshOutcome = nil }
        guard let store, let key = storeKey else {
            if resolution == .requireSignIn { await clearCredential() }
            return
        }
        try await store.withRefreshLock(forKey: key, timeout: configuration.storeLockTimeout) {
            try await store.removeValue(forKey: Self.inFlightKey(for: key))
            if resolution == .requireSignIn { try await store.removeValue(forKey: key) }
        }
        if resolution == .requireSignIn {
            await clearCredential()
        } else {
            state.withLock { $0.resetRefreshState() }
            if sessionState == .refreshOutcomeUnknown { setSessionState(.signedIn) }
        }
    }
}

/// How ``AuthenticationInterceptor/resolveUnknownRefreshOutcome(_:)`` resolves an unknown
/// refresh outcome.
public enum UnknownRefreshOutcomeResolution: Sendable, Hashable {
    /// Refresh again with the stored refresh token.
    case retryWithStoredRefreshToken
    /// Clear the session everywhere; users sign in again.
    case requireSignIn
}

/// A server's refusal of a first credential obtained under the lock, kept beside the entry so
/// that the processes that waited for it fail with it rather than ask the person again.
struct SignInRefusal: Codable, Sendable {
    /// The `error` code.
    let code: String
    /// The `error_description`.
    let description: String?
    /// When it was refused, in seconds since 1970.
    let at: TimeInterval
}
