#if PostgreSQL
    import AuthenticatedRequests
    import Foundation
    import Metrics
    import Tracing

    /// What the store reports to swift-metrics and swift-distributed-tracing: no-ops until the
    /// application bootstraps a backend (`MetricsSystem.bootstrap`, `InstrumentationSystem.bootstrap`).
    ///
    /// Labels and attributes name the operation, the table, a SQLSTATE's cause and an error's
    /// code: never an entry's key (it names an account), a token, or a key.
    struct StoreMetrics: Sendable {
        let table: String

        /// One store operation's duration, by `operation` and `outcome` (`ok` or the error code).
        func recordOperation(_ operation: Operation, duration: Duration, error: (any Error)?) {
            let outcome = error.map(Self.outcome) ?? "ok"
            Timer(
                label: "authreq_store_operation_duration_seconds",
                dimensions: [("operation", operation.rawValue), ("table", table), ("outcome", outcome)]
            ).recordNanoseconds(Self.nanoseconds(duration))
            if error != nil {
                Counter(
                    label: "authreq_store_errors_total",
                    dimensions: [("operation", operation.rawValue), ("table", table), ("code", outcome)]
                ).increment()
            }
        }

        /// An attempt that failed transiently and is tried again.
        func recordRetry(_ operation: Operation, cause: String) {
            Counter(
                label: "authreq_store_retries_total",
                dimensions: [("operation", operation.rawValue), ("table", table), ("cause", cause)]
            ).increment()
        }

        /// A wait for another replica's refresh, by how it ended (`released`, `timed_out`, `failed`).
        func recordLeaseWait(duration: Duration, outcome: String) {
            Timer(
                label: "authreq_store_lease_wait_duration_seconds",
                dimensions: [("table", table), ("outcome", outcome)]
            ).recordNanoseconds(Self.nanoseconds(duration))
        }

        /// A lease taken over from a holder that let it expire.
        func recordTakeover() {
            Counter(label: "authreq_store_lease_takeovers_total", dimensions: [("table", table)]).increment()
        }

        /// A lease this replica held and lost (its renewal came too late, or a write was fenced).
        func recordLeaseLost() {
            Counter(label: "authreq_store_leases_lost_total", dimensions: [("table", table)]).increment()
        }

        /// Runs `body` in a span named after `operation`, with the table as its only attribute
        /// besides the operation, and times it. A failure sets the span's status and the
        /// attribute `authreq.store.error` to the error's code; the error itself (which names the
        /// entry) is not recorded.
        func span<Value: Sendable>(
            _ operation: Operation, _ body: @Sendable () async throws -> Value
        ) async throws -> Value {
            let started = ContinuousClock.now
            let span = startSpan("authreq.store.\(operation.rawValue)", ofKind: .client)
            span.attributes["db.system"] = "postgresql"
            span.attributes["db.operation"] = operation.rawValue
            span.attributes["authreq.store.table"] = table
            defer { span.end() }
            do {
                let value = try await ServiceContext.$current.withValue(span.context) { try await body() }
                recordOperation(operation, duration: ContinuousClock.now - started, error: nil)
                return value
            } catch {
                let code = Self.outcome(error)
                span.attributes["authreq.store.error"] = code
                span.setStatus(SpanStatus(code: .error, message: code))
                recordOperation(operation, duration: ContinuousClock.now - started, error: error)
                throw error
            }
        }

        /// The store's operations, as labels.
        enum Operation: String, Sendable {
            case load, save, remove, migrate, reseal
            case takeLease = "take_lease"
            case pollLease = "poll_lease"
            case renewLease = "renew_lease"
            case releaseLease = "release_lease"
        }

        /// An error's code as a label: `TokenStoreError`'s codes, snake-cased; `other` otherwise.
        static func outcome(_ error: any Error) -> String {
            guard let error = error as? TokenStoreError else { return "other" }
            return error.code.description.replacingOccurrences(of: " ", with: "_")
                .replacingOccurrences(of: "/", with: "_")
        }

        private static func nanoseconds(_ duration: Duration) -> Int64 {
            let (seconds, attoseconds) = duration.components
            return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        }
    }
#endif
