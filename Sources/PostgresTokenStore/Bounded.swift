#if PostgreSQL
    import AuthenticatedRequests
    import Foundation

    /// Time limits for database calls: PostgresNIO's pool keeps a request waiting while it retries
    /// an unreachable server, so every call the store makes is bounded (the package's
    /// `withTimeLimit`).
    enum Bounded {
        /// The bound passed.
        struct TimedOut: Error {}

        /// `operation`'s outcome, or ``TimedOut`` after `seconds`.
        static func run<Value: Sendable>(
            within seconds: TimeInterval,
            _ operation: @escaping @Sendable () async throws -> Value
        ) async throws -> Value {
            try await withTimeLimit(seconds, timeoutError: { TimedOut() }, operation)
        }
    }
#endif
