import Foundation

// Contract point 8: every change of credential reaches the token store.
extension AuthenticationInterceptor {
    /// Does the store work a request must wait for: saves the credential given at creation, and
    /// reads the stored one if not yet read. A corrupt entry is reported and left untouched.
    func settle() async throws {
        if needsInitialSave {
            needsInitialSave = false
            if let credential = state.withLock({ $0.credential }) { await save(credential) }
        }
        if needsStoreLoad, let store, let storeKey {
            let startedGeneration = state.withLock { $0.generation }
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
            // Something newer (a configure, a sign-in) happened while reading: keep it.
            if needsStoreLoad, startedGeneration == state.withLock({ $0.generation }) {
                if let data {
                    let credential: Credential
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
                    state.withLock { state in
                        state.credential = credential
                        state.generation &+= 1
                    }
                    emit(.credentialLoaded)
                }
                needsStoreLoad = false
            }
        }
        let isSettled = !needsStoreLoad && !needsInitialSave
        state.withLock { $0.isSettled = isSettled }
    }

    func save(_ credential: Credential) async {
        guard let store, let storeKey else { return }
        do {
            try await store.save(try JSONEncoder().encode(credential), forKey: storeKey)
        } catch {
            emit(.storeFailed, error: error)
        }
    }

    func removeFromStore() async {
        guard let store, let storeKey else { return }
        do {
            try await store.removeValue(forKey: storeKey)
        } catch {
            emit(.storeFailed, error: error)
        }
    }
}
