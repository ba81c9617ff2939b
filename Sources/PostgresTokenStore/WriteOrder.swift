#if PostgreSQL
    import AuthenticatedRequests
    import Foundation

    /// Keeps one store's writes of an entry in the order they were made, also when a caller
    /// stopped waiting for one, without letting one stuck write hold up the entry's later writes.
    ///
    /// A write whose caller timed out (``PostgresTokenStore/Configuration/operationTimeout``)
    /// can still reach the database later: a statement already sent is not called back, and the
    /// server may run it after the caller stopped waiting. Unordered, such a late write would land over newer writes that were
    /// acknowledged, and an acknowledged token would be lost. A write can also never finish: a
    /// statement whose connection the server closed has been seen to stay unanswered in
    /// PostgresNIO. Waiting for it, every later write of the entry would time out.
    ///
    /// So each write runs in a transaction and asks its ``Write`` before its `COMMIT`
    /// (``Write/mayCommit()``). The next write of the entry starts once the previous one has
    /// finished, has asked to commit, or has been given up by its caller:
    /// - given up before asking, it never commits (it rolls back when it asks);
    /// - asking to commit, its statement has run and holds the row's lock (or the unique index
    ///   entry's) until its transaction ends: PostgreSQL makes the next write's statement wait
    ///   for that, so the next write lands after it.
    ///
    /// Every write a caller sees succeed therefore comes after all earlier ones that land.
    final class WriteOrder: Sendable {
        /// The last write started for each entry, and its number (to forget it once done).
        private struct Queue {
            var last: [String: (number: UInt64, write: Write)] = [:]
            var count: UInt64 = 0
        }
        private let queue = Locked(Queue())

        /// Runs `write` once the previous write of `key` has finished, asked to commit or been
        /// given up; waits at most `seconds` for both, then gives `write` up.
        func run(
            _ key: String, within seconds: TimeInterval, _ write: @escaping @Sendable (Write) async throws -> Void
        ) async throws {
            let current = Write()
            let (number, task) = queue.withLock { queue -> (UInt64, Task<Void, any Error>) in
                let previous = queue.last[key]?.write
                let task = Task {
                    defer { current.finish() }
                    await previous?.passed()
                    try current.checkNotGivenUp()
                    try await write(current)
                }
                queue.count &+= 1
                queue.last[key] = (queue.count, current)
                return (queue.count, task)
            }
            defer {
                // Forget the write once it is done, unless a newer one is queued behind it.
                Task { [queue] in
                    _ = await task.result
                    queue.withLock { if $0.last[key]?.number == number { $0.last[key] = nil } }
                }
            }
            do {
                try await Bounded.run(within: seconds) { try await task.value }
            } catch let error as Bounded.TimedOut {
                current.giveUp()
                throw error
            }
        }

        /// One write's progress, which the next write of the entry waits on.
        final class Write: Sendable {
            enum Progress {
                /// Its statement has not asked to commit.
                case running
                /// It asked to commit: it holds the row until its transaction ends.
                case committing
                /// Its caller gave up before it asked to commit: it never commits.
                case givenUp
                /// It succeeded or failed.
                case finished
            }

            private struct State {
                var progress = Progress.running
                var waiters: [CheckedContinuation<Void, Never>] = []
            }
            private let state = Locked(State())

            /// The write was given up by its caller before it could commit.
            struct GivenUp: Error {}

            /// Called after the write's statement, before its `COMMIT`: throws ``GivenUp`` (so
            /// that the transaction rolls back) when its caller gave up.
            func mayCommit() throws {
                try move(to: .committing)
            }

            /// Whether the write asked to commit (or finished): a failed attempt may then have
            /// committed, and trying it again could land it after a newer write.
            var askedToCommit: Bool {
                let progress = state.withLock { $0.progress }
                return progress == .committing || progress == .finished
            }

            /// Throws ``GivenUp`` when the caller gave up already.
            func checkNotGivenUp() throws {
                if state.withLock({ $0.progress }) == .givenUp { throw GivenUp() }
            }

            /// The caller stopped waiting.
            func giveUp() {
                try? move(to: .givenUp)
            }

            /// The write succeeded or failed.
            func finish() {
                try? move(to: .finished)
            }

            /// Returns once the write is no longer ``Progress/running``.
            func passed() async {
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state in
                        guard state.progress == .running else { return true }
                        state.waiters.append(continuation)
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }

            /// Leaves ``Progress/running`` for `next`; throws ``GivenUp`` when moving to
            /// ``Progress/committing`` after the caller gave up. Other moves out of a state other
            /// than running change nothing (a finished write stays finished).
            private func move(to next: Progress) throws {
                let (waiters, refused) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Bool) in
                    switch (state.progress, next) {
                    case (.running, _):
                        state.progress = next
                        defer { state.waiters = [] }
                        return (state.waiters, false)
                    case (.givenUp, .committing):
                        return ([], true)
                    case (.committing, .finished):
                        state.progress = .finished
                        return ([], false)
                    default:
                        return ([], false)
                    }
                }
                for waiter in waiters { waiter.resume() }
                if refused { throw GivenUp() }
            }
        }
    }
#endif
