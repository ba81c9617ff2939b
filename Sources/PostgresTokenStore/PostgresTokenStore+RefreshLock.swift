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
            try await withRefreshLock(forKey: key, timeout: timeout, adoptingAfterWait: { nil }, body)
        }

        /// Runs `body` holding the entry's advisory lock; when another replica holds it, waits
        /// for its release with a shared lock (every waiter wakes at once) and returns what
        /// `adopt` finds instead, when it finds something.
        ///
        /// - Throws: as ``withRefreshLock(forKey:timeout:_:)``; `adopt`'s and `body`'s own errors
        ///   unchanged.
        public func withRefreshLock<Value: Sendable>(
            forKey key: String,
            timeout: TimeInterval,
            adoptingAfterWait adopt: @Sendable () async throws -> Value?,
            _ body: @Sendable () async throws -> Value
        ) async throws -> Value {
            if Self.isUncoordinated { return try await body() }
            let lock = HeldLock(store: self, lockID: Self.lockID(table: table, key: key), timeout: timeout)
            let heldAtOnce: Bool
            do {
                heldAtOnce = try await lock.firstAttempt()
            } catch {
                return try await withoutLock(after: error, key: key, timeout: timeout, body)
            }
            if !heldAtOnce {
                // Another replica refreshed meanwhile: its result, read by every waiter at once.
                let adopted: Value?
                do {
                    adopted = try await adopt()
                } catch {
                    lock.giveUp()
                    throw error
                }
                if let adopted {
                    lock.giveUp()
                    return adopted
                }
                do {
                    try await lock.acquireAfterWaiting()
                } catch {
                    return try await withoutLock(after: error, key: key, timeout: timeout, body)
                }
            }
            // The refresh runs in the caller's task; the lock's connection waits beside it.
            let result = await Result(catching: body)
            await lock.release()
            return try result.get()
        }

        /// The lock could not be had: the error, or, for an unreachable database and
        /// ``UnavailablePolicy/refreshUncoordinated``, `body` without the lock.
        private func withoutLock<Value: Sendable>(
            after error: any Error,
            key: String,
            timeout: TimeInterval,
            _ body: @Sendable () async throws -> Value
        ) async throws -> Value {
            let failure = lockError(error, key: key, timeout: timeout)
            guard failure.code == .unavailable, configuration.whenUnavailable == .refreshUncoordinated else {
                throw failure
            }
            return try await Self.$isUncoordinated.withValue(true) { try await body() }
        }

        /// A lock that a task of its own takes and holds on one pooled connection, so that the
        /// caller can stop waiting for it (a database that does not answer) without waiting for
        /// that task, and run the refresh itself in its own task.
        private struct HeldLock: Sendable {
            let store: PostgresTokenStore
            let lockID: Int64
            let timeout: TimeInterval
            let connected = OneShot<Void>()
            /// The first lock query answered: the database is there (a pooled connection to a
            /// database that went away can be handed out and then never answer).
            let answered = OneShot<Void>()
            /// `true`: the lock was free and is held; `false`: another replica held it, and has
            /// released it since.
            let first = OneShot<Bool>()
            /// The caller's answer after a wait: `true` to take the lock, `false` to stop.
            let proceed = OneShot<Bool>()
            let acquired = OneShot<Void>()
            let released = OneShot<Void>()
            let gate = LockGate()
            let holder = Locked<Task<Void, Never>?>(nil)

            /// Waits at most `operationTimeout` for a connection, then at most `responseTimeout`
            /// for the database's first answer (to `pg_try_advisory_lock`, which never waits for
            /// a lock: a database that does not answer it is away, not busy with another
            /// replica's refresh), then at most `timeout` for the lock or another replica's
            /// release of it; returns whether the lock is held.
            ///
            /// The first answer may be slow without the database being away: sixteen processes
            /// starting at once on two busy cores kept a healthy server from answering within
            /// the 5 s `operationTimeout`, hence a `responseTimeout` of its own (10 s by default).
            func firstAttempt() async throws -> Bool {
                let task = Task { await hold() }
                holder.withLock { $0 = task }
                do {
                    do {
                        try await Bounded.run(within: store.configuration.operationTimeout) {
                            try await connected.value()
                        }
                        try await Bounded.run(within: store.configuration.responseTimeout) {
                            try await answered.value()
                        }
                    } catch is Bounded.TimedOut {
                        throw Unreachable()
                    }
                    return try await Bounded.run(within: timeout + store.configuration.operationTimeout) {
                        try await first.value()
                    }
                } catch {
                    // Held after all, at the last moment: keep it.
                    guard gate.abandon() else { return true }
                    task.cancel()
                    throw error
                }
            }

            /// After a wait whose result did not do: takes the lock, waiting at most `timeout`.
            func acquireAfterWaiting() async throws {
                proceed.finish(with: .success(true))
                do {
                    try await Bounded.run(within: timeout + store.configuration.operationTimeout) {
                        try await acquired.value()
                    }
                } catch {
                    guard gate.abandon() else { return }
                    holder.withLock { $0 }?.cancel()
                    throw error
                }
            }

            /// After a wait whose result did: nothing to hold.
            func giveUp() {
                _ = gate.abandon()
                proceed.finish(with: .success(false))
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
                        var previousLockTimeout: String?
                        let heldAtOnce = try await store.tryLock(lockID, on: connection)
                        answered.finish(with: .success(()))
                        if !heldAtOnce {
                            previousLockTimeout = try await store.setLockTimeout(timeout, on: connection)
                            try await store.waitForRelease(lockID, on: connection)
                            first.finish(with: .success(false))
                            guard (try? await proceed.value()) == true else {
                                try? await store.restoreLockTimeout(previousLockTimeout, on: connection)
                                return
                            }
                            try await connection.query("SELECT pg_advisory_lock(\(lockID))", logger: store.logger)
                                .drain()
                        }
                        guard gate.enter() else {
                            // The caller gave up meanwhile: release at once.
                            try? await store.unlock(lockID, on: connection, restoring: previousLockTimeout)
                            return
                        }
                        first.finish(with: .success(true))
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
                    answered.finish(with: .failure(error))
                    first.finish(with: .failure(error))
                    acquired.finish(with: .failure(error))
                }
            }
        }

        /// The database could not be reached in time.
        struct Unreachable: Error {}

        fileprivate func tryLock(_ lockID: Int64, on connection: PostgresConnection) async throws -> Bool {
            var acquired = false
            let attempt = try await connection.query("SELECT pg_try_advisory_lock(\(lockID))", logger: logger)
            for try await held in attempt.decode(Bool.self) { acquired = held }
            return acquired
        }

        /// Sets PostgreSQL's `lock_timeout` for this session to `timeout`; returns the old value.
        fileprivate func setLockTimeout(_ timeout: TimeInterval, on connection: PostgresConnection) async throws
            -> String?
        {
            let milliseconds = String(max(1, Int((timeout * 1000).rounded(.up))))
            var previous: String?
            let rows = try await connection.query(
                "SELECT current_setting('lock_timeout'), set_config('lock_timeout', \(milliseconds), false)",
                logger: logger)
            for try await (setting, _) in rows.decode((String, String).self) { previous = setting }
            return previous
        }

        fileprivate func restoreLockTimeout(_ lockTimeout: String?, on connection: PostgresConnection) async throws {
            guard let lockTimeout else { return }
            try await connection.query("SELECT set_config('lock_timeout', \(lockTimeout), false)", logger: logger)
                .drain()
        }

        /// Waits until no session holds the lock exclusively, without keeping it: a shared lock
        /// taken and dropped at once, so every waiter wakes at the same time.
        fileprivate func waitForRelease(_ lockID: Int64, on connection: PostgresConnection) async throws {
            try await connection.query(
                "SELECT pg_advisory_lock_shared(\(lockID))::text, pg_advisory_unlock_shared(\(lockID))",
                logger: logger
            ).drain()
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
                        message: "no database connection within \(configuration.operationTimeout) s, or no answer "
                            + "on one within \(configuration.responseTimeout) s"))
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
