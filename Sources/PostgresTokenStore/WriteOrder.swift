#if PostgreSQL
    import AuthenticatedRequests
    import Foundation

    /// Keeps one store's writes of an entry in the order they were made, also when a caller
    /// stopped waiting for one.
    ///
    /// A write whose caller timed out (``PostgresTokenStore/Configuration/operationTimeout``)
    /// can still reach the database later: PostgresNIO's pool holds the request until it has a
    /// connection. Unordered, such a late write would land over newer writes that were
    /// acknowledged, and an acknowledged token would be lost. Here each write of an entry starts
    /// only once the previous write of that entry has finished (succeeded, failed or been given
    /// up on by its caller), so every write a caller sees succeed comes after all earlier ones.
    final class WriteOrder: Sendable {
        /// The last write started for each entry, and its number (to forget it once done).
        private struct Queue {
            var last: [String: (number: UInt64, task: Task<Void, any Error>)] = [:]
            var count: UInt64 = 0
        }
        private let queue = Locked(Queue())

        /// Runs `write` after the previous write of `key` has finished; waits at most `seconds`
        /// for both. A write whose caller timed out still runs, in its turn.
        func run(
            _ key: String, within seconds: TimeInterval, _ write: @escaping @Sendable () async throws -> Void
        ) async throws {
            let (number, task) = queue.withLock { queue -> (UInt64, Task<Void, any Error>) in
                let previous = queue.last[key]?.task
                let task = Task {
                    _ = await previous?.result
                    try await write()
                }
                queue.count &+= 1
                queue.last[key] = (queue.count, task)
                return (queue.count, task)
            }
            defer {
                // Forget the write once it is done, unless a newer one is queued behind it.
                Task { [queue] in
                    _ = await task.result
                    queue.withLock { if $0.last[key]?.number == number { $0.last[key] = nil } }
                }
            }
            try await Bounded.run(within: seconds) { try await task.value }
        }
    }
#endif
