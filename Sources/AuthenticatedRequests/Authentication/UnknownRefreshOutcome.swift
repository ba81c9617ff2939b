import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A refresh whose outcome nobody knows: a process took the store's refresh lock, recorded that it
/// was refreshing, and died before it stored the result. The server may have spent the stored
/// refresh token. ``AuthenticationInterceptor/unknownRefreshOutcome`` and the error
/// ``AuthenticationError/Code/refreshOutcomeUnknown`` (its ``AuthenticationError/underlyingError``)
/// carry it: when, and by which process.
///
/// An operator resolves it with one call,
/// ``AuthenticationInterceptor/resolveUnknownRefreshOutcome(_:)``; a server with a refresh-token
/// reuse grace period can let the engine retry on its own within that period
/// (``AuthenticationInterceptor/Configuration/refreshTokenReuseGracePeriod``).
public struct UnknownRefreshOutcome: Error, Sendable, Hashable, CustomStringConvertible {
    /// The store entry whose refresh was in flight.
    public let storeKey: String
    /// When the refresh started, by the refreshing process's clock; `nil` for a record written
    /// by an older release of the package.
    public let startedAt: Date?
    /// The process that refreshed: `host`, process name and id; `nil` for an older record.
    public let holder: String?

    /// Creates a description of an unknown outcome.
    public init(storeKey: String, startedAt: Date?, holder: String?) {
        self.storeKey = storeKey
        self.startedAt = startedAt
        self.holder = holder
    }

    /// `the refresh started at 2026-11-24T08:00:00Z by host worker (pid 812)`.
    public var description: String {
        var text = "the refresh of '\(storeKey)'"
        if let startedAt { text += " started at \(ISO8601DateFormatter().string(from: startedAt))" }
        if let holder { text += " by \(holder)" }
        return text
    }
}

/// What the engine writes next to a store entry while it refreshes it, holding the lock: the
/// credential it refreshes from, when, and who it is. A record found by the next lock holder
/// means its writer died in the middle.
struct InFlightRecord: Codable {
    /// The credential refreshed from, canonical JSON.
    var credential: Data
    /// Seconds since 1970.
    var startedAt: Double
    var holder: String

    /// The record as stored: a JSON object, or, from releases before it had one, the credential
    /// itself.
    static func decode(_ data: Data) -> InFlightRecord? {
        guard let record = try? JSONDecoder().decode(InFlightRecord.self, from: data),
            record.startedAt.isFinite
        else { return nil }
        return record
    }

    /// This process, for the record: host, name and id.
    static var thisProcess: String {
        var name = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&name, name.count) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown host"
        let info = ProcessInfo.processInfo
        return "\(host) \(info.processName) (pid \(info.processIdentifier))"
    }
}
