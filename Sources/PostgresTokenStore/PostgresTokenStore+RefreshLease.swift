#if PostgreSQL
    import AuthenticatedRequests
    import Crypto
    import Foundation
    import Logging
    import PostgresNIO

    // The refresh lease: a row in `<table>_leases` that one replica holds while it refreshes an
    // entry. Every step is one statement in a transaction of its own (explicit where it changes
    // the row, so that it counts only once committed), timed by the database's clock, so nothing
    // depends on a session (it works through PgBouncer's transaction pooling) and a waiting
    // replica holds no connection between its statements.
    extension PostgresTokenStore {
        /// Runs `body` holding the entry's refresh lease, waiting at most `timeout` seconds for
        /// another replica's refresh.
        ///
        /// - Throws: `TokenStoreError` `.lockTimedOut` when another replica held the lease for
        ///   longer than `timeout`; `.unavailable` when the database could not be reached (unless
        ///   ``UnavailablePolicy/refreshUncoordinated``, which then runs `body` without the lease).
        public func withRefreshLock<Value: Sendable>(
            forKey key: String,
            timeout: TimeInterval,
            _ body: @Sendable () async throws -> Value
        ) async throws -> Value {
            try await withRefreshLock(forKey: key, timeout: timeout, adoptingAfterWait: { nil }, body)
        }

        /// Runs `body` holding the entry's refresh lease; when another replica holds it, polls
        /// until that replica releases it (or its lease expires) and returns what `adopt` finds
        /// instead, when it finds something.
        ///
        /// Waiting costs one short statement per poll and no connection in between: the first
        /// poll after 100 ms, each next one half as late again up to 1 s, each ±25 % at random
        /// so that a fleet's polls spread out.
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
            let lease = RefreshLease(store: self, key: key)
            let deadline = ContinuousClock.now + .seconds(timeout)
            var held: Bool
            do {
                // The first statement never waits for a lease, so a database that does not
                // answer it in time is away, not busy with another replica's refresh.
                held = try await Bounded.run(within: configuration.responseTimeout) { try await lease.take() }
            } catch {
                return try await withoutLease(after: error, key: key, timeout: timeout, body)
            }
            while !held {
                do {
                    try await lease.waitForRelease(until: deadline)
                } catch {
                    throw leaseError(error, key: key, timeout: timeout)
                }
                // Another replica refreshed meanwhile: its result.
                if let adopted = try await adopt() { return adopted }
                do {
                    held = try await database(key, "take the refresh lease") { try await lease.take() }
                } catch {
                    return try await withoutLease(after: error, key: key, timeout: timeout, body)
                }
            }
            // The refresh runs in the caller's task, its statements on a connection held until
            // the lease is released (the pool's when none comes in time); the lease is renewed
            // beside it.
            let hold = ConnectionHold(client: client)
            let connection = await hold.connection(within: configuration.operationTimeout)
            let result = await Self.$pinnedConnection.withValue(connection) {
                let renewal = Task { await lease.keepRenewed() }
                let result = await Result(catching: body)
                renewal.cancel()
                await renewal.value
                await lease.release()
                return result
            }
            await hold.release()
            return try result.get()
        }

        /// The lease could not be had: the error, or, for an unreachable database and
        /// ``UnavailablePolicy/refreshUncoordinated``, `body` without the lease.
        private func withoutLease<Value: Sendable>(
            after error: any Error,
            key: String,
            timeout: TimeInterval,
            _ body: @Sendable () async throws -> Value
        ) async throws -> Value {
            let failure = leaseError(error, key: key, timeout: timeout)
            guard failure.code == .unavailable, configuration.whenUnavailable == .refreshUncoordinated else {
                throw failure
            }
            return try await Self.$isUncoordinated.withValue(true) { try await body() }
        }

        /// A failure before the lease was held, as a `TokenStoreError`.
        private func leaseError(_ error: any Error, key: String, timeout: TimeInterval) -> TokenStoreError {
            switch error {
            case is Bounded.TimedOut:
                return TokenStoreError(
                    code: .unavailable, key: key, path: table,
                    underlyingError: DatabaseError(
                        sqlState: "",
                        message: "no answer from the database within \(configuration.responseTimeout) s"))
            case is RefreshLease.HeldElsewhere:
                return TokenStoreError(
                    code: .lockTimedOut, key: key, path: table,
                    underlyingError: DatabaseError(
                        sqlState: "", message: "another replica held the refresh lease for over \(timeout) s"))
            default:
                return storeError(error, key: key)
            }
        }
    }

    /// One replica's claim on an entry's refresh lease, under a holder name of its own.
    struct RefreshLease: Sendable {
        let store: PostgresTokenStore
        let key: String
        /// Names this claim; only it renews or releases the lease it took.
        let holder = UUID().uuidString

        /// Another replica still held the lease at the deadline.
        struct HeldElsewhere: Error {}

        private var leases: String { "\(store.table)_leases" }
        private var duration: Double { store.configuration.leaseDuration }

        /// Takes the lease if nobody holds it or its holder let it expire; returns whether it is
        /// held now. Never waits for another replica.
        func take() async throws -> Bool {
            try await store.committed { [self] connection in
                let rows = try await connection.query(
                    """
                    INSERT INTO \(unescaped: leases) AS lease (store_key, holder, expires_at)
                    VALUES (\(key), \(holder), clock_timestamp() + make_interval(secs => \(duration)))
                    ON CONFLICT (store_key) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
                    WHERE lease.expires_at <= clock_timestamp()
                    RETURNING 1
                    """, logger: store.logger)
                var taken = false
                for try await _ in rows.decode(Int.self) { taken = true }
                return taken
            }
        }

        /// Whether a replica holds the lease now (by the database's clock).
        func isHeld() async throws -> Bool {
            let rows = try await store.query(
                "SELECT expires_at > clock_timestamp() FROM \(unescaped: leases) WHERE store_key = \(key)")
            var held = false
            for try await live in rows.decode(Bool.self) { held = live }
            return held
        }

        /// Polls until nobody holds the lease; throws ``HeldElsewhere`` at `deadline`. A poll
        /// that fails is tried again at the next one (a fleet can fill the database's connection
        /// slots for a moment); the last failure is thrown when the deadline comes first.
        func waitForRelease(until deadline: ContinuousClock.Instant) async throws {
            var delay = 0.1
            var lastFailure: (any Error)?
            while true {
                let remaining = ContinuousClock.now.duration(to: deadline)
                guard remaining > .zero else { throw lastFailure ?? HeldElsewhere() }
                try await Task.sleep(for: min(.seconds(delay * Double.random(in: 0.75...1.25)), remaining))
                delay = min(delay * 1.5, 1)
                do {
                    if try await store.database(key, "poll the refresh lease", { try await isHeld() }) == false {
                        return
                    }
                    lastFailure = nil
                } catch {
                    lastFailure = error
                }
            }
        }

        /// Renews the lease every third of its duration until cancelled, so that it outlives a
        /// slow refresh but not a dead holder.
        func keepRenewed() async {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: .seconds(duration / 3))
                } catch {
                    return
                }
                _ = try? await store.database(key, "renew the refresh lease") { [self] in
                    try await store.committed { connection in
                        try await connection.query(
                            """
                            UPDATE \(unescaped: leases) SET expires_at = clock_timestamp() + make_interval(secs => \(duration))
                            WHERE store_key = \(key) AND holder = \(holder)
                            """, logger: store.logger
                        ).drain()
                    }
                }
            }
        }

        /// Gives the lease up; when the database cannot be reached, it expires by itself.
        func release() async {
            _ = try? await store.database(key, "release the refresh lease") { [self] in
                try await store.committed { connection in
                    try await connection.query(
                        "DELETE FROM \(unescaped: leases) WHERE store_key = \(key) AND holder = \(holder)",
                        logger: store.logger
                    ).drain()
                }
            }
        }
    }

    /// A pooled connection that a task of its own holds until ``release()``, so that the caller
    /// can stop waiting for one without waiting for that task.
    struct ConnectionHold: Sendable {
        private let held = OneShot<PostgresConnection>()
        private let done = OneShot<Void>()
        private let task: Task<Void, Never>

        init(client: PostgresClient) {
            let (held, done) = (self.held, self.done)
            task = Task {
                do {
                    try await client.withConnection { connection in
                        held.finish(with: .success(connection))
                        _ = try? await done.value()
                    }
                } catch {
                    held.finish(with: .failure(error))
                }
            }
        }

        /// The connection, or `nil` when none came within `seconds`.
        func connection(within seconds: TimeInterval) async -> PostgresConnection? {
            try? await Bounded.run(within: seconds) { try await held.value() }
        }

        /// Returns the connection to the pool (or stops waiting for one).
        func release() async {
            done.finish(with: .success(()))
            task.cancel()
            await task.value
        }
    }

    extension PostgresTokenStore {
        /// The advisory lock's number that serializes ``migrate()`` across replicas: 64 bits of
        /// SHA-256 of the table and key. Transaction-scoped, so it works through a pooler.
        static func lockID(table: String, key: String) -> Int64 {
            let digest = SHA256.hash(data: Data("authreq-refresh-lock\u{0}\(table)\u{0}\(key)".utf8))
            return digest.prefix(8).reduce(Int64(0)) { ($0 << 8) | Int64($1) }
        }
    }
#endif
