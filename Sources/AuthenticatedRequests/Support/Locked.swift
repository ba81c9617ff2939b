import Foundation

/// A value guarded by a lock, for the few places where state must be read and written from
/// synchronous code on any thread.
///
/// `@unchecked Sendable` is sound: `value` is private and only touched inside `withLock`,
/// which holds `lock` for the whole access, so no two threads ever see it at once.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
