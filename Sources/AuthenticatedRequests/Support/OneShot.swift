/// An outcome delivered once, to one waiter: the first of several racers to finish wins (a
/// response against a deadline, a redirect against a timeout), and later outcomes are ignored.
package final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var outcome: Result<Value, any Error>?
        var continuation: UnsafeContinuation<Value, any Error>?
    }

    private let state = Locked(State())

    package init() {}

    /// Delivers `outcome`, unless one was delivered already.
    package func finish(with outcome: Result<Value, any Error>) {
        let continuation = state.withLock { state -> UnsafeContinuation<Value, any Error>? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: outcome)
    }

    /// Whether an outcome was delivered.
    package var isFinished: Bool { state.withLock { $0.outcome != nil } }

    /// Waits for the outcome; cancelling the waiting task delivers `CancellationError`.
    package func value() async throws -> Value {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                // Exactly one resumes it: these lines (already finished) or a later `finish`.
                let outcome = state.withLock { state -> Result<Value, any Error>? in
                    if let outcome = state.outcome { return outcome }
                    state.continuation = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            finish(with: .failure(CancellationError()))
        }
    }
}
