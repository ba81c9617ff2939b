#if PostgreSQL
    import AuthenticatedRequests
    import Crypto
    import Foundation
    import PostgresNIO

    // The refresh lock: a session-level advisory lock on one pooled connection, held only while
    // the engine refreshes (no transaction is open meanwhile).
    extension PostgresTokenStore {
        /// Runs `body` holding the entry's advisory lock, waiting at most `timeout` seconds for
        /// another replica's refresh and ``Configuration/operationTimeout`` for a connection.
        ///
        /// - Throws: `TokenStoreError` `.lockTimedOut` when another replica held the lock for
        ///   longer than `timeout`; `.unavailable` when the database could not be reached (unless
        ///   ``UnavailablePolicy/refreshUncoordinated``, which then runs `body` without the lock).
        public func withRefreshLock<Value: Sendable>(
            forKey key: String,
            timeout: TimeInterval,
            _ body: @Sendable () async throws -> Value
        ) async throws -> Value {
            if Self.isUncoordinated { return try await body() }
            let lock = HeldLock(
                store: self, lockID: Self.lockID(table: table, key: key), timeout: timeout)
            do {
                try await lock.acquire()
            } catch {
                let failure = lockError(error, key: key, timeout: timeout)
                guard failure.code == .unavailable, configuration.whenUnavailable == .refreshUncoordinated else {
                    throw failure
                }
                return try await Self.$isUncoordinated.withValue(true) { try await body() }
            }
            // The refresh runs in the caller's task; the lock's connection waits beside it.
            let result = await Bounded.outcome(of: body)
            await lock.release()
            return try result.get()
        }

        /// A lock that a task of its own takes and holds on one pooled connection, so that the
        /// caller can stop waiting for it (a database that does not answer) without waiting for
        /// that task, and run the refresh itself in its own task.
        private struct HeldLock: Sendable {
            let store: PostgresTokenStore
            let lockID: Int64
            let timeout: TimeInterval
            let connected = OneShot<Void>()
            let acquired = OneShot<Void>()
            let released = OneShot<Void>()
            let gate = LockGate()
            let holder = Locked<Task<Void, Never>?>(nil)

            /// Waits at most `operationTimeout` for a connection, then at most `timeout` for the lock.
            func acquire() async throws {
                let task = Task { await hold() }
                holder.withLock { $0 = task }
                do {
                    do {
                        try await Bounded.run(within: store.configuration.operationTimeout) {
                            try await connected.value()
                        }
                    } catch is Bounded.TimedOut {
                        throw Unreachable()
                    }
                    try await Bounded.run(within: timeout + store.configuration.operationTimeout) {
                        try await acquired.value()
                    }
                } catch {
                    // Held after all, at the last moment: keep it.
                    guard gate.abandon() else { return }
                    task.cancel()
                    throw error
                }
            }

            /// Lets the holder unlock, and waits until it has.
            func release() async {
                released.finish(with: .success(()))
                await holder.withLock { $0 }?.value
            }

            private func hold() async {
                do {
                    try await store.client.withConnection { connection in
                        connected.finish(with: .success(()))
                        let previousLockTimeout = try await store.lock(lockID, on: connection, timeout: timeout)
                        guard gate.enter() else {
                            // The caller gave up meanwhile: release at once.
                            try? await store.unlock(lockID, on: connection, restoring: previousLockTimeout)
                            return
                        }
                        acquired.finish(with: .success(()))
                        _ = try? await released.value()
                        do {
                            try await store.unlock(lockID, on: connection, restoring: previousLockTimeout)
                        } catch {
                            // The session holds the lock while its connection lives: close it.
                            try? await connection.close()
                        }
                    }
                } catch {
                    connected.finish(with: .failure(error))
                    acquired.finish(with: .failure(error))
                }
            }
        }

        /// The database could not be reached in time.
        struct Unreachable: Error {}

        /// Takes the lock on `connection`, waiting at most `timeout` (PostgreSQL's `lock_timeout`)
        /// when another replica holds it; returns the `lock_timeout` to restore, if it was changed.
        fileprivate func lock(_ lockID: Int64, on connection: PostgresConnection, timeout: TimeInterval)
            async throws -> String?
        {
            var acquired = false
            let attempt = try await connection.query("SELECT pg_try_advisory_lock(\(lockID))", logger: logger)
            for try await held in attempt.decode(Bool.self) { acquired = held }
            guard !acquired else { return nil }
            let milliseconds = String(max(1, Int((timeout * 1000).rounded(.up))))
            var previous: String?
            let rows = try await connection.query(
                "SELECT current_setting('lock_timeout'), set_config('lock_timeout', \(milliseconds), false)",
                logger: logger)
            for try await (setting, _) in rows.decode((String, String).self) { previous = setting }
            try await connection.query("SELECT pg_advisory_lock(\(lockID))", logger: logger).drain()
            return previous
        }

        fileprivate func unlock(_ lockID: Int64, on connection: PostgresConnection, restoring lockTimeout: String?)
            async throws
        {
            if let lockTimeout {
                try await connection.query(
                    "SELECT pg_advisory_unlock(\(lockID)), set_config('lock_timeout', \(lockTimeout), false)",
                    logger: logger
                ).drain()
            } else {
                try await connection.query("SELECT pg_advisory_unlock(\(lockID))", logger: logger).drain()
            }
        }

        /// A failure before the lock was held, as a `TokenStoreError`.
        private func lockError(_ error: any Error, key: String, timeout: TimeInterval) -> TokenStoreError {
            let isLockTimeout =
                error is Bounded.TimedOut
                || (error as? PSQLError).map { $0.code == .server && $0.serverInfo?[.sqlState] == "55P03" } ?? false
            if error is Unreachable {
                return TokenStoreError(
                    code: .unavailable, key: key, path: table,
                    underlyingError: DatabaseError(
                        sqlState: "",
                        message: "no database connection within \(configuration.operationTimeout) s"))
            }
            if isLockTimeout {
                return TokenStoreError(
                    code: .lockTimedOut, key: key, path: table,
                    underlyingError: DatabaseError(
                        sqlState: "55P03", message: "another replica held the refresh lock for over \(timeout) s"))
            }
            return storeError(error, key: key)
        }

        /// The advisory lock's number for an entry: 64 bits of SHA-256 of the table and key.
        static func lockID(table: String, key: String) -> Int64 {
            let digest = SHA256.hash(data: Data("authreq-refresh-lock\u{0}\(table)\u{0}\(key)".utf8))
            return digest.prefix(8).reduce(Int64(0)) { ($0 << 8) | Int64($1) }
        }
    }

    /// Decides, once, whether the lock holder may run the refresh or the waiting caller gave up.
    final class LockGate: Sendable {
        private enum Phase { case waiting, entered, abandoned }
        private let phase = Locked(Phase.waiting)

        /// The holder: `true` if the caller still waits; the refresh may run.
        func enter() -> Bool {
            phase.withLock { phase in
                guard phase == .waiting else { return false }
                phase = .entered
                return true
            }
        }

        /// The deadline: `true` if the refresh had not started; the caller stops waiting.
        func abandon() -> Bool {
            phase.withLock { phase in
                guard phase == .waiting else { return false }
                phase = .abandoned
                return true
            }
        }
    }
#endif
