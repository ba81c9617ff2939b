#if PostgreSQL
    import Foundation
    import Logging
    import NIOCore
    import PostgresNIO

    /// The store's own few connections: opened when a statement needs one, closed soon after they
    /// fall idle, and never retried behind the caller's back.
    ///
    /// A general-purpose pool (PostgresNIO's `PostgresClient`) keeps idle connections for a minute
    /// and retries a refused login in the background while requests wait: a fleet of replicas
    /// then holds more of the server's `max_connections` than it uses, and a wrong password shows
    /// as a timeout. Here a connection attempt's failure reaches the statement that needed it, so
    /// the store tells "too many connections" (try again) from "password authentication failed"
    /// (a configuration error) at once, and a waiting replica holds no connection between polls.
    actor ConnectionPool {
        private let configuration: PostgresConnection.Configuration
        private let maximum: Int
        private let idleTimeout: Duration
        private let logger: Logger

        private var idle: [(connection: PostgresConnection, since: ContinuousClock.Instant)] = []
        /// Connections open or being opened, leased or idle.
        private var open = 0
        /// Leases waiting for a connection to come back, in arrival order.
        private var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
        private var nextID: UInt64 = 0
        /// The leases holding a slot, and their connection once it is open.
        private var holders: [UInt64: PostgresConnection?] = [:]
        /// Leases abandoned before they had a slot.
        private var abandoned: Set<UInt64> = []
        private var isShutDown = false

        /// The longest one TCP connection attempt may take before it is given up and tried again
        /// (as a transient failure, within the statement's response timeout). A server whose
        /// listen queue overflows (a fleet connecting at once to a loaded machine) drops SYNs, and
        /// the kernel would try the same one again only after 1, 3 and 7 seconds: with fresh
        /// attempts the statement reaches the server as soon as the queue drains, instead of
        /// reading as an unavailable database after 10 s of silence.
        static let connectAttemptTimeout = TimeAmount.seconds(2)

        init(configuration: PostgresConnection.Configuration, maximum: Int, idleTimeout: Duration, logger: Logger) {
            var configuration = configuration
            if configuration.options.connectTimeout > Self.connectAttemptTimeout {
                configuration.options.connectTimeout = Self.connectAttemptTimeout
            }
            self.configuration = configuration
            self.maximum = max(1, maximum)
            self.idleTimeout = idleTimeout
            self.logger = logger
        }

        deinit {
            // The store was let go of without ``shutdown()``: its idle connections close anyway.
            for (connection, _) in idle { Task { try? await connection.close() } }
        }

        /// How many connections are open (leased or idle), idle, and leases waiting: for tests.
        var counts: (open: Int, idle: Int, waiting: Int) { (open, idle.count, waiters.count) }

        /// The pool was shut down (``shutdown()``).
        struct ShutDown: Error {}

        /// A number for one lease; its slot is given back by ``release(_:_:reusable:)``, or by
        /// ``abandon(_:)`` when its caller stops waiting.
        func newTicket() -> UInt64 {
            nextID &+= 1
            return nextID
        }

        /// A connection of the pool for `ticket`: an idle one, a new one when fewer than the
        /// maximum are open, or the next one returned. A failed connection attempt throws the
        /// server's or the network's error as it is. Cancellation stops the wait.
        func lease(_ ticket: UInt64) async throws -> PostgresConnection {
            while true {
                guard !isShutDown else { throw ShutDown() }
                if abandoned.remove(ticket) != nil { throw CancellationError() }
                while let (connection, _) = idle.popLast() {
                    if !connection.isClosed {
                        holders[ticket] = .some(connection)
                        return connection
                    }
                    open -= 1
                }
                if open < maximum {
                    open += 1
                    holders[ticket] = .some(nil)
                    do {
                        let connection = try await PostgresConnection.connect(
                            configuration: configuration, id: Int(truncatingIfNeeded: ticket), logger: logger)
                        guard holders[ticket] != nil else {
                            // Abandoned while it connected: its slot was given back already.
                            close(connection)
                            throw CancellationError()
                        }
                        holders[ticket] = .some(connection)
                        return connection
                    } catch {
                        if holders.removeValue(forKey: ticket) != nil {
                            open -= 1
                            wakeOne()
                        }
                        throw error
                    }
                }
                try await waitForReturn()
            }
        }

        /// Gives `ticket`'s `connection` back: kept idle for reuse when `reusable`, closed
        /// otherwise (a statement that failed on the way, or was cancelled, may have left it
        /// mid-reply). A connection whose lease was abandoned is closed; its slot was given back.
        func release(_ ticket: UInt64, _ connection: PostgresConnection, reusable: Bool) {
            guard holders.removeValue(forKey: ticket) != nil else {
                close(connection)
                return
            }
            if reusable, !isShutDown, !connection.isClosed {
                let since = ContinuousClock.now
                idle.append((connection, since))
                let idleTimeout = self.idleTimeout
                Task { [weak self] in
                    try? await Task.sleep(for: idleTimeout)
                    await self?.closeIdle(since: since, connection: connection)
                }
            } else {
                open -= 1
                close(connection)
            }
            wakeOne()
        }

        /// The caller of `ticket` stopped waiting: its slot is given back now and its connection
        /// closed, whether or not the statement on it ever ends (PostgresNIO has left a statement
        /// on a connection whose backend was killed unanswered for good).
        func abandon(_ ticket: UInt64) {
            if let held = holders.removeValue(forKey: ticket) {
                open -= 1
                if let connection = held { close(connection) }
                wakeOne()
            } else {
                // Not leased yet (or returned already): refuse it if it comes. Bounded, so that
                // late cancellations of finished leases cannot pile up.
                if abandoned.count >= 1024 { abandoned.removeAll() }
                abandoned.insert(ticket)
            }
        }

        /// Runs `body` on a leased connection and gives it back; abandons the lease when the
        /// calling task is cancelled.
        func withConnection<Value: Sendable>(
            _ body: @Sendable (PostgresConnection) async throws -> Value
        ) async throws -> Value {
            let ticket = newTicket()
            return try await withTaskCancellationHandler {
                let connection = try await lease(ticket)
                do {
                    let value = try await Self.run(body, on: connection)
                    release(ticket, connection, reusable: true)
                    return value
                } catch {
                    release(ticket, connection, reusable: Self.leavesConnectionUsable(error))
                    throw error
                }
            } onCancel: {
                Task { await self.abandon(ticket) }
            }
        }

        /// Runs `body` on `connection`; cancelled, it closes the connection, which fails whatever
        /// statement is waiting on it. PostgresNIO has left a statement on a connection whose
        /// backend was killed unanswered for good: without this, its connection (and its slot in
        /// the pool) would never come back.
        static func run<Value: Sendable>(
            _ body: @Sendable (PostgresConnection) async throws -> Value, on connection: PostgresConnection
        ) async throws -> Value {
            try await withTaskCancellationHandler {
                try await body(connection)
            } onCancel: {
                let closing: EventLoopFuture<Void> = connection.close()
                _ = closing
            }
        }

        /// Closes the idle connections and refuses new leases; leased ones close when returned.
        func shutdown() {
            isShutDown = true
            for (connection, _) in idle { close(connection) }
            open -= idle.count
            idle = []
            for waiter in waiters { waiter.continuation.resume() }
            waiters = []
        }

        /// Whether a connection is still usable after `error`: only an answer of the server
        /// (its transaction rolled back) leaves it in a known state.
        static func leavesConnectionUsable(_ error: any Error) -> Bool {
            if let error = error as? PSQLError { return error.code == .server }
            if let error = error as? PostgresTransactionError {
                let inner = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
                return error.rollbackError == nil && inner.map(leavesConnectionUsable) ?? true
            }
            return error is DatabaseError
        }

        private func closeIdle(since: ContinuousClock.Instant, connection: PostgresConnection) {
            guard
                let index = idle.firstIndex(where: {
                    $0.since == since && ObjectIdentifier($0.connection) == ObjectIdentifier(connection)
                })
            else { return }
            idle.remove(at: index)
            open -= 1
            close(connection)
            wakeOne()
        }

        private func close(_ connection: PostgresConnection) {
            Task { try? await connection.close() }
        }

        private func wakeOne() {
            guard !waiters.isEmpty else { return }
            waiters.removeFirst().continuation.resume()
        }

        /// Waits until a connection is returned or closed, or the task is cancelled.
        private func waitForReturn() async throws {
            nextID &+= 1
            let id = nextID
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    if Task.isCancelled {
                        continuation.resume()
                    } else {
                        waiters.append((id, continuation))
                    }
                }
            } onCancel: {
                Task { await self.cancelWait(id) }
            }
            try Task.checkCancellation()
        }

        private func cancelWait(_ id: UInt64) {
            guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
            waiters.remove(at: index).continuation.resume()
        }
    }
#endif
