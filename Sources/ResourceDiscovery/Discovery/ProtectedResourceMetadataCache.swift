import AuthenticatedRequests
import Foundation

/// Protected resource metadata by resource, kept for a lifetime: one discovery per resource,
/// not one per request. A challenge that names other metadata than the cached copy came from
/// replaces it at once (RFC 9728 §5.1: the resource moved its metadata).
public actor ProtectedResourceMetadataCache {
    private struct Entry {
        var metadata: ProtectedResourceMetadata
        var source: URL?
        var fetchedAt: Date
    }

    /// How long a discovered document is used, in seconds; an hour unless given.
    public nonisolated let lifetime: TimeInterval
    private let context: AuthenticationContext
    private var entries: [String: Entry] = [:]
    private var inFlight: [String: Task<ProtectedResourceMetadata, any Error>] = [:]
    /// How many documents were fetched (for tests and diagnostics).
    public private(set) var discoveries = 0

    /// Creates a cache that discovers over `context`.
    public init(lifetime: TimeInterval = 3600, context: AuthenticationContext) {
        self.lifetime = lifetime
        self.context = context
    }

    /// The metadata of `resource`: cached while fresh and while `challenges` name no other
    /// metadata URL; otherwise discovered (one discovery for concurrent callers).
    public func metadata(
        for resource: URL, challenges: [AuthenticationChallenge] = []
    ) async throws -> ProtectedResourceMetadata {
        let key = try ProtectedResourceMetadata.canonical(resource).absoluteString
        let named = ProtectedResourceMetadata.metadataURL(in: challenges)
        let now = context.clock.now
        if let entry = entries[key], now.timeIntervalSince(entry.fetchedAt) < lifetime, entry.fetchedAt <= now,
            named == nil || named == entry.source
        {
            return entry.metadata
        }
        if let running = inFlight[key] { return try await running.value }
        let context = self.context
        let task = Task {
            try await ProtectedResourceMetadata.discover(for: resource, challenges: challenges, context: context)
        }
        inFlight[key] = task
        defer { inFlight[key] = nil }
        discoveries += 1
        let metadata = try await task.value
        entries[key] = Entry(metadata: metadata, source: named, fetchedAt: now)
        return metadata
    }

    /// Forgets every document.
    public func removeAll() {
        entries = [:]
    }
}
