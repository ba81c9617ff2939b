import Foundation

/// Where credentials are kept across launches, one entry per key.
///
/// An ``AuthenticationInterceptor`` writes every change of its credential here (obtained,
/// refreshed, rotated, cleared) as JSON. Keys name a client at a server, so two clients never
/// share an entry. ``InMemoryTokenStore`` and ``FileTokenStore`` are provided; a Keychain or
/// database store is a small conformance.
public protocol TokenStore: Sendable {
    /// The entry for `key`, or `nil` when there is none.
    func load(forKey key: String) async throws -> Data?
    /// Replaces the entry for `key` with `data`.
    func save(_ data: Data, forKey key: String) async throws
    /// Removes the entry for `key`; no error when there is none.
    func removeValue(forKey key: String) async throws
}

/// Why a ``TokenStore`` failed.
public struct TokenStoreError: Error, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The entry exists but is not a readable credential; it was left untouched.
        public static let corrupt = Code("corrupt entry")
        /// Reading, writing or removing failed; see ``TokenStoreError/underlyingError``.
        public static let ioFailed = Code("input/output failed")
        /// The store's location is not safe for secrets (a folder of another user, or not a
        /// folder); nothing was written.
        public static let insecureLocation = Code("insecure location")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// The entry's key.
    public let key: String
    /// The file, for a ``FileTokenStore``.
    public let path: String?
    /// The error behind this one (a POSIX or decoding error).
    public let underlyingError: (any Error)?

    /// Creates an error.
    public init(code: Code, key: String, path: String? = nil, underlyingError: (any Error)? = nil) {
        self.code = code
        self.key = key
        self.path = path
        self.underlyingError = underlyingError
    }

    /// `TokenStoreError(corrupt entry) for 'key' at path: underlying`.
    public var description: String {
        var text = "TokenStoreError(\(code)) for '\(key)'"
        if let path { text += " at \(path)" }
        if let underlyingError { text += ": \(Redaction.redact(String(describing: underlyingError)))" }
        return text
    }
}
