#if PostgreSQL
    import AuthenticatedRequests
    import Foundation

    /// Time limits for database calls: a connection to a paused server, or a statement on a
    /// connection whose backend died, can wait for ever, so every call the store makes is bounded
    /// (the package's `withTimeLimit`).
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
