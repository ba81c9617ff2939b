/// The outcome of the one refresh under way, awaited by every request that needs it.
///
/// Waiters suspend on continuations kept under a lock; ``finish(with:)`` resumes them all at
/// once. Awaiting a `Task`'s `value` from many tasks would be simpler, but the Swift runtime
/// resumes a task's waiters slowly: 10,000 tasks waiting for a 50 ms task took 670 ms on Linux,
/// against 103 ms with continuations (Benchmarks/README.md, "Coalesced refresh").
final class SharedRefresh<Value: Sendable>: Sendable {
    private struct State: Sendable {
        var outcome: Result<Value, any Error>?
        var waiters: [CheckedContinuation<Value, any Error>] = []
    }

    private let state = Locked(State())

    /// The refresh's credential, or its error; suspends until ``finish(with:)`` when it has not
    /// finished yet. A waiter's cancellation does not end the wait (nor the refresh): the request
    /// checks for cancellation once it has the outcome.
    func value() async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let outcome = state.withLock { state -> Result<Value, any Error>? in
                if state.outcome == nil { state.waiters.append(continuation) }
                return state.outcome
            }
            if let outcome { continuation.resume(with: outcome) }
        }
    }

    /// Records the outcome and resumes every waiter with it; later calls change nothing.
    func finish(with outcome: Result<Value, any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Value, any Error>] in
            guard state.outcome == nil else { return [] }
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(with: outcome) }
    }
}
