import AuthenticatedRequests
import Foundation

/// Hands the first redirect (or failure) to the one waiting task: of the loopback receiver and
/// of ``CustomSchemeUserAgent`` alike.
typealias RedirectWaiter = OneShot<URL>

extension OneShot where Value == URL {
    /// Delivers the outcome; only the first one counts.
    func finish(_ result: Result<URL, any Error>) { finish(with: result) }

    /// Waits for the outcome; cancellation ends the wait with `CancellationError`.
    func wait() async throws -> URL { try await value() }
}
