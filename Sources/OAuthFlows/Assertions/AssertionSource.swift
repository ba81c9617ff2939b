import AuthenticatedRequests
import Foundation

/// Where a JWT bearer grant (RFC 7523 §2.1) gets its assertion, asked anew for every grant:
/// platforms rotate the tokens they hand a workload (a Kubernetes projected service-account
/// token, a SPIFFE JWT-SVID file), so nothing is read once and kept.
///
/// ```swift
/// let workload = AssertionSource.file(URL(fileURLWithPath: "/var/run/secrets/tokens/mcp-token"))
/// ```
///
/// An assertion whose `exp` has passed (by the context's clock) is not sent: the grant fails with
/// ``AssertionError`` naming the source and when it expired.
public struct AssertionSource: Sendable, CustomStringConvertible {
    /// What the source is, for messages; never the assertion.
    public let name: String
    private let read: @Sendable (AuthenticationContext) async throws -> String

    /// A source that runs `read` for every grant.
    ///
    /// - Parameters:
    ///   - name: What the source is, for messages (never the assertion).
    ///   - read: Gives the assertion to present now.
    public init(name: String, _ read: @escaping @Sendable (AuthenticationContext) async throws -> String) {
        self.name = name
        self.read = read
    }

    /// The assertion to present now, after the expiry check.
    ///
    /// - Throws: ``AssertionError``: the source gave nothing, or an assertion that has expired.
    public func assertion(for context: AuthenticationContext) async throws -> String {
        let assertion = try await read(context).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !assertion.isEmpty else { throw AssertionError(.empty, "\(name) gave no assertion; nothing was sent.") }
        if let expiry = Self.expiry(of: assertion), expiry <= context.clock.now {
            throw AssertionError(
                .expired,
                "The assertion from \(name) expired at \(ISO8601DateFormatter().string(from: expiry)); "
                    + "nothing was sent.",
                expiredAt: expiry)
        }
        return assertion
    }

    /// The file at `url`, read for every grant (a projected service-account token, a JWT-SVID).
    ///
    /// Only a regular file of at most 64 KiB of UTF-8 is read (at most 64 KiB + 1 bytes are read,
    /// whatever its size); a pipe, device or folder is refused at once, never waited on. Each
    /// refusal is an ``AssertionError`` with its own code, and nothing is sent.
    public static func file(_ url: URL) -> AssertionSource {
        AssertionSource(name: "the file \(url.path)") { _ in try AssertionFile.read(url) }
    }

    /// The environment variable `name`, read for every grant.
    public static func environment(_ name: String) -> AssertionSource {
        AssertionSource(name: "the environment variable \(name)") { _ in
            ProcessInfo.processInfo.environment[name] ?? ""
        }
    }

    /// Always `assertion`.
    public static func fixed(_ assertion: String) -> AssertionSource {
        AssertionSource(name: "a fixed assertion") { _ in assertion }
    }

    /// The `exp` of a JWT, read without verifying it (the authorization server verifies); `nil`
    /// when it is not a JWT or has no usable `exp`.
    static func expiry(of assertion: String) -> Date? { JWTClaimsPeek(assertion)?.expiry }

    /// The source's name.
    public var description: String { name }
}

/// Why an assertion source gave nothing to send; nothing was sent.
public struct AssertionError: Error, CustomStringConvertible {
    /// The kind of failure. More may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The assertion's `exp` has passed.
        public static let expired = Code("expired")
        /// The source could not be read (a missing or unreadable file).
        public static let unreadable = Code("unreadable")
        /// The file is not a regular file (a pipe, a device, a folder): it was not read.
        public static let notARegularFile = Code("not a regular file")
        /// The file is larger than the limit (64 KiB); no more than the limit and one byte was read.
        public static let tooLarge = Code("too large")
        /// The file is not valid UTF-8.
        public static let invalidEncoding = Code("invalid encoding")
        /// The source gave an empty assertion.
        public static let empty = Code("empty")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// What happened, naming the source; never the assertion.
    public let message: String
    /// When the assertion expired, for ``Code/expired``.
    public let expiredAt: Date?

    init(_ code: Code, _ message: String, expiredAt: Date? = nil) {
        self.code = code
        self.message = message
        self.expiredAt = expiredAt
    }

    /// `AssertionError(<code>): <message>`.
    public var description: String { "AssertionError(\(code)): \(message)" }
}
