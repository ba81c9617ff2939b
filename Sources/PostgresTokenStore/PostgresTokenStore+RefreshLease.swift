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
            // Taking the lease never waits for another replica: a busy database is tried again
            // until the wait's deadline, one that answers nothing is unavailable.
            let takeDeadline = max(deadline, .now + .seconds(configuration.operationTimeout))
            var held: Bool
            do {
                held = try await lease.take(until: takeDeadline)
            } catch {
                return try await withoutLease(after: error, key: key, timeout: timeout, body)
            }
            while !held {
                let waitStarted = ContinuousClock.now
                do {
                    try await lease.waitForRelease(until: deadline)
                    metrics.recordLeaseWait(duration: .now - waitStarted, outcome: "released")
                } catch {
                    metrics.recordLeaseWait(
                        duration: .now - waitStarted,
                        outcome: error is RefreshLease.HeldElsewhere ? "timed_out" : "failed")
                    throw leaseError(error, key: key, timeout: timeout)
                }
                // Another replica refreshed meanwhile: its result, read within the wait's
                // deadline (at least responseTimeout from now), its reads tried again as needed.
                let readDeadline = max(deadline, .now + .seconds(configuration.responseTimeout))
                if let adopted = try await Self.$adoptDeadline.withValue(readDeadline, operation: adopt) {
                    return adopted
                }
                do {
                    held = try await lease.take(until: max(deadline, .now + .seconds(configuration.responseTimeout)))
                } catch {
                    return try await withoutLease(after: error, key: key, timeout: timeout, body)
                }
            }
            // The lease is renewed on a connection of its own (a task started outside the
            // holder's scope), so a statement of the holder that waits (a row lock, a slow disk)
            // never holds up the renewal. The refresh runs in the caller's task, its statements
            // on a connection kept until the lease is released (the pool's when none comes in
            // time), and its writes fenced by the lease.
            let renewal = Task { await lease.keepRenewed() }
            let holding = HeldLease(lease: lease)
            await holding.keepConnection(from: connections, within: configuration.responseTimeout)
            let result = await Self.$heldLease.withValue(holding) { await Result(catching: body) }
            renewal.cancel()
            await renewal.value
            await holding.returnConnection(to: connections)
            await lease.release()
            return try result.get()
        }

        /// The lease could not be had: the error, or, for an unreachable database and
        /// ``UnavailablePolicy/refreshUncoordinated``, `body` without the lease. A misconfigured
        /// store (`.misconfigured`) never refreshes without it.
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
            case is RefreshLease.HeldElsewhere:
                return TokenStoreError(
                    code: .lockTimedOut, key: key, path: table,
                    underlyingError: DatabaseError(
                        sqlState: "", message: "another replica held the refresh lease for over \(timeout) s"))
            default:
                return storeError(error, key: key)
            }
        }

        /// The deadline of reads made while adopting another replica's result after a wait
        /// (the wait's own, not a fresh ``Configuration/operationTimeout``).
        @TaskLocal static var adoptDeadline: ContinuousClock.Instant?
    }

    /// The lease a refresh holds, and the connection it keeps for its statements meanwhile.
    final class HeldLease: Sendable {
        let lease: RefreshLease
        private let kept = Locked<(ticket: UInt64, connection: PostgresConnection, usable: Bool)?>(nil)

        init(lease: RefreshLease) {
            self.lease = lease
        }

        /// The kept connection, while it is usable.
        func connection() -> PostgresConnection? {
            kept.withLock { kept in
                guard let kept, kept.usable, !kept.connection.isClosed else { return nil }
                return kept.connection
            }
        }

        /// Leases a connection to keep, waiting at most `seconds`; without one, the holder's
        /// statements take the pool's like any other.
        func keepConnection(from pool: ConnectionPool, within seconds: TimeInterval) async {
            let ticket = await pool.newTicket()
            let connection = try? await Bounded.run(within: seconds) { try await pool.lease(ticket) }
            if let connection {
                kept.withLock { $0 = (ticket, connection, true) }
            } else {
                await pool.abandon(ticket)
            }
        }

        /// Stops using the kept connection after a failure left it in an unknown state; the
        /// holder's next statements take the pool's.
        func dropConnection() {
            kept.withLock { $0?.usable = false }
        }

        /// Gives the kept connection back to `pool` (closed there when it is no longer usable).
        func returnConnection(to pool: ConnectionPool) async {
            guard
                let kept = kept.withLock({ kept in
                    defer { kept = nil }; return kept
                })
            else { return }
            await pool.release(kept.ticket, kept.connection, reusable: kept.usable)
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

        /// Another replica holds the lease this claim held: a write under it is not committed.
        struct Lost: Error {}

        private var leases: String { "\(store.table)_leases" }
        private var duration: Double { store.configuration.leaseDuration }

        /// Takes the lease if nobody holds it or its holder let it expire; returns whether it is
        /// held now. Never waits for another replica; a busy database is tried again until
        /// `deadline`.
        func take(until deadline: ContinuousClock.Instant) async throws -> Bool {
            let (key, holder, duration, leases, logger) = (key, holder, duration, leases, store.logger)
            let outcome = try await store.database(key, .takeLease, "take the refresh lease", until: deadline) {
                connection -> (taken: Bool, takeover: Bool) in
                try await connection.withTransaction(logger: logger) { connection in
                    // xmax is set on a row version that replaced another: a lease taken over
                    // from a holder that let it expire (or, rarely, this claim's own row, below).
                    // The row may already be this claim's: an
                    // attempt whose COMMIT was answered by a lost connection may have committed,
                    // and the attempt after it finds its own lease.
                    let rows = try await connection.query(
                        """
                        INSERT INTO \(unescaped: leases) AS lease (store_key, holder, expires_at)
                        VALUES (\(key), \(holder), clock_timestamp() + make_interval(secs => \(duration)))
                        ON CONFLICT (store_key) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
                        WHERE lease.expires_at <= clock_timestamp() OR lease.holder = EXCLUDED.holder
                        RETURNING (xmax <> 0)
                        """, logger: logger)
                    var outcome = (taken: false, takeover: false)
                    for try await replaced in rows.decode(Bool.self) { outcome = (true, replaced) }
                    return outcome
                }
            }
            if outcome.takeover { store.metrics.recordTakeover() }
            return outcome.taken
        }

        /// Whether a replica holds the lease now (by the database's clock).
        func isHeld(until deadline: ContinuousClock.Instant) async throws -> Bool {
            let (key, leases, logger) = (key, leases, store.logger)
            return try await store.database(key, .pollLease, "poll the refresh lease", until: deadline) { connection in
                let rows = try await connection.query(
                    "SELECT expires_at > clock_timestamp() FROM \(unescaped: leases) WHERE store_key = \(key)",
                    logger: logger)
                var held = false
                for try await live in rows.decode(Bool.self) { held = live }
                return held
            }
        }

        /// Polls until nobody holds the lease; throws ``HeldElsewhere`` at `deadline`. Each poll
        /// is tried again within the deadline when the database is busy; a poll that fails for
        /// good throws.
        func waitForRelease(until deadline: ContinuousClock.Instant) async throws {
            var delay = 0.1
            while true {
                let remaining = ContinuousClock.now.duration(to: deadline)
                guard remaining > .zero else { throw HeldElsewhere() }
                try await Task.sleep(for: min(.seconds(delay * Double.random(in: 0.75...1.25)), remaining))
                delay = min(delay * 1.5, 1)
                guard ContinuousClock.now < deadline else { throw HeldElsewhere() }
                // A poll runs to its own bound: one that starts just before the deadline is not
                // cut short by it (the lease would read as an unavailable database).
                let pollDeadline = max(deadline, .now + .seconds(store.configuration.responseTimeout))
                if try await isHeld(until: pollDeadline) == false { return }
            }
        }

        /// Renews the lease every third of its duration until cancelled, so that it outlives a
        /// slow refresh but not a dead holder. Runs outside the holder's scope: on the pool's
        /// connections, never the holder's. Stops once the lease is no longer this claim's.
        func keepRenewed() async {
            let (key, holder, duration, leases, logger) = (key, holder, duration, leases, store.logger)
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: .seconds(duration / 3))
                } catch {
                    return
                }
                let renewed = try? await store.database(
                    key, .renewLease, "renew the refresh lease", until: .now + .seconds(duration)
                ) { connection in
                    try await connection.withTransaction(logger: logger) { connection in
                        let rows = try await connection.query(
                            """
                            UPDATE \(unescaped: leases) SET expires_at = clock_timestamp() + make_interval(secs => \(duration))
                            WHERE store_key = \(key) AND holder = \(holder) AND expires_at > clock_timestamp()
                            RETURNING 1
                            """, logger: logger)
                        var renewed = false
                        for try await _ in rows.decode(Int.self) { renewed = true }
                        return renewed
                    }
                }
                if renewed == false {
                    store.metrics.recordLeaseLost()
                    return
                }
            }
        }

        /// Within a write's transaction, before its `COMMIT`: throws ``Lost`` unless this claim
        /// still holds the lease. It locks the lease row until the transaction ends, so no
        /// replica takes the lease over between the check and the commit; a lease that expired
        /// but that nobody took over is still this claim's, and the write stands.
        func fence(on connection: PostgresConnection) async throws {
            let rows = try await connection.query(
                "SELECT holder FROM \(unescaped: leases) WHERE store_key = \(key) FOR SHARE", logger: store.logger)
            var current: String?
            for try await name in rows.decode(String.self) { current = name }
            guard current == holder else { throw Lost() }
        }

        /// Gives the lease up; when the database cannot be reached, it expires by itself.
        func release() async {
            let (key, holder, leases, logger) = (key, holder, leases, store.logger)
            _ = try? await store.database(key, .releaseLease, "release the refresh lease") { connection in
                try await connection.withTransaction(logger: logger) { connection in
                    try await connection.query(
                        "DELETE FROM \(unescaped: leases) WHERE store_key = \(key) AND holder = \(holder)",
                        logger: logger
                    ).drain()
                }
            }
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
