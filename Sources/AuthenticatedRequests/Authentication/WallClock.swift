import Foundation

/// The source of the current date, injected so tests can move time without sleeping.
public protocol WallClock: Sendable {
    /// The current date.
    var now: Date { get }
}

/// The system's clock.
public struct SystemWallClock: WallClock {
    /// Creates the system clock.
    public init() {}

    /// `Date()`.
    public var now: Date { Date() }
}
