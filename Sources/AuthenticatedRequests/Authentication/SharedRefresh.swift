/// The outcome of the one refresh under way, awaited by every request that needs it.
///
/// Waiters suspend on continuations kept under a lock; ``finish(with:)`` resumes them all at
/// once, in the order they came. Awaiting a `Task`'s `value` from many tasks would be simpler,
/// but the Swift runtime resumes a task's waiters slowly: 10,000 tasks waiting for a 50 ms task
/// took 276 ms, against 102 ms on continuations (Benchmarks/README.md, "Coalesced refresh"). The
/// order matters as much: resumed in hash order instead, the same 10,000 took 300–530 ms.
///
/// The continuations are unsafe ones because `CheckedContinuation` allocates its check for every
/// waiter (median 105 → 93 ms for the 10,000). Each is resumed exactly once: it is either
/// resumed where it is created or stored in its slot, and it leaves the slot only under the lock,
/// taken by either ``finish(with:)`` or the waiter's cancellation handler, never both.
final class SharedRefresh<Value: Sendable>: Sendable {
    private struct State: Sendable {
        var outcome: Result<Value, any Error>?
        /// One slot per waiter, in arrival order; `nil` until it suspends and after it is resumed.
        /// Slots are handed out only before the outcome is known.
        var waiters: [UnsafeContinuation<Value, any Error>?] = []
    }

    private enum Arrival {
        case finished(Result<Value, any Error>)
        case waiting(slot: Int)
    }

    private let state = Locked(State())

    /// The refresh's credential, or its error; suspends until ``finish(with:)`` when it has not
    /// finished yet. A cancelled waiter stops waiting at once with `CancellationError`; the
    /// refresh goes on for the others.
    func value() async throws -> Value {
        let arrival = state.withLock { state -> Arrival in
            if let outcome = state.outcome { return .finished(outcome) }
            state.waiters.append(nil)
            return .waiting(slot: state.waiters.count - 1)
        }
        let slot: Int
        switch arrival {
        case .finished(let outcome): return try outcome.get()
        case .waiting(let waiting): slot = waiting
        }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                // Exactly one resumes this continuation: the lines below (outcome already known,
                // or already cancelled), or later `finish(with:)` or `onCancel`.
                let immediate = state.withLock { state -> Result<Value, any Error>? in
                    if let outcome = state.outcome { return outcome }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[slot] = continuation
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> UnsafeContinuation<Value, any Error>? in
                guard slot < state.waiters.count else { return nil }
                defer { state.waiters[slot] = nil }
                return state.waiters[slot]
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Records the outcome and resumes every waiter with it, first come first resumed; later
    /// calls change nothing.
    func finish(with outcome: Result<Value, any Error>) {
        let waiters = state.withLock { state -> [UnsafeContinuation<Value, any Error>] in
            guard state.outcome == nil else { return [] }
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters.compactMap { $0 }
        }
        for waiter in waiters { waiter.resume(with: outcome) }
    }
}
