#if PostgreSQL
    import AuthenticatedRequests
    import Foundation

    /// Time limits for database calls: PostgresNIO's pool keeps a request waiting while it retries
    /// an unreachable server, so every call the store makes is bounded here.
    enum Bounded {
        /// The bound passed.
        struct TimedOut: Error {}

        /// `operation`'s outcome, or ``TimedOut`` after `seconds`; the operation is then cancelled
        /// and the caller does not wait for it to notice.
        static func run<Value: Sendable>(
            within seconds: TimeInterval,
            _ operation: @escaping @Sendable () async throws -> Value
        ) async throws -> Value {
            let race = OneShot<Value>()
            let work = Task { race.finish(with: await Self.outcome(of: operation)) }
            let timer = Task {
                try await Task.sleep(nanoseconds: UInt64(min(max(seconds, 0), 1e7) * 1e9))
                race.finish(with: .failure(TimedOut()))
            }
            defer {
                work.cancel()
                timer.cancel()
            }
            return try await race.value()
        }

        static func outcome<Value>(of body: () async throws -> Value) async -> Result<Value, any Error> {
            do {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }
    }
#endif
