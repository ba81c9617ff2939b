import Foundation

/// A ``TokenStore`` that keeps entries in memory, for the life of the process.
public actor InMemoryTokenStore: TokenStore {
    private var entries: [String: Data] = [:]

    /// Creates an empty store.
    public init() {}

    /// The entry for `key`.
    public func load(forKey key: String) -> Data? {
        entries[key]
    }

    /// Replaces the entry for `key`.
    public func save(_ data: Data, forKey key: String) {
        entries[key] = data
    }

    /// Removes the entry for `key`.
    public func removeValue(forKey key: String) {
        entries[key] = nil
    }
}
