import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Runs `operation` with a total deadline of `seconds` (none when `nil`).
///
/// When the deadline passes, the operation's task is cancelled and the caller gets
/// ``HTTPTransportError/Code/timedOut`` at once, without waiting for the operation to notice
/// the cancellation: a transport that is slow to cancel cannot hold the caller. Cancelling the
/// caller cancels the operation.
package func withDeadline<Value: Sendable>(
    _ seconds: TimeInterval?,
    for request: URLRequest,
    _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    guard let seconds else { return try await operation() }
    let url = request.url
    return try await withTimeLimit(
        seconds, timeoutError: { HTTPTransportError.timedOut(after: seconds, url: url) }, operation)
}

/// Runs `operation` for at most `seconds`; then its task is cancelled and the caller gets
/// `timeoutError()` at once, without waiting for the operation to notice the cancellation.
/// Cancelling the caller cancels the operation. Every bounded wait of the package (transports,
/// database stores) goes through here.
package func withTimeLimit<Value: Sendable>(
    _ seconds: TimeInterval,
    timeoutError: @escaping @Sendable () -> any Error,
    _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    let race = OneShot<Value>()
    let work = Task { race.finish(with: await Result(catching: operation)) }
    let timer = Task {
        try await Task.sleep(nanoseconds: UInt64(Swift.min(Swift.max(seconds, 0), 1e7) * 1e9))
        race.finish(with: .failure(timeoutError()))
    }
    defer {
        work.cancel()
        timer.cancel()
    }
    return try await race.value()
}

extension Result where Failure == any Error {
    /// The outcome of an async throwing `body`.
    package init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
