import Foundation

/// The excessive-refresh guard: at most ``maximumCount`` refreshes within ``window``.
///
/// A server that rejects every fresh credential would otherwise trigger a refresh per request
/// forever. Past the limit, requests fail with ``AuthenticationError/Code/excessiveRefresh``.
public struct RefreshLimit: Sendable, Hashable {
    /// The most refreshes allowed within ``window``.
    public var maximumCount: Int
    /// The length of the sliding window, in seconds.
    public var window: TimeInterval

    /// Creates a limit; the default allows 5 refreshes in 30 seconds.
    public init(maximumCount: Int = 5, window: TimeInterval = 30) {
        self.maximumCount = maximumCount
        self.window = window
    }
}
