import Foundation

/// The URLs a token issued for one protected resource may be sent to: the resource's origin
/// (scheme, host, port) and its path with everything below it, as RFC 8707 resource indicators
/// and RFC 9728 resource identifiers name a resource.
///
/// `https://api.example.com/mcp` contains `https://api.example.com/mcp`,
/// `https://api.example.com/mcp/` and `https://api.example.com/mcp/tools?x=1`, but not
/// `https://api.example.com/mcpx`, `https://api.example.com/other` or
/// `http://api.example.com/mcp`. A resource whose path is empty or `/` contains its whole origin.
///
/// An ``OAuthFlow`` that names its boundary (``OAuthFlow/resourceBoundary``) makes its
/// ``OAuthAuthenticator`` refuse any URL outside it with
/// ``AuthenticationError/Code/foreignResource`` before anything is sent: no sign-in, no
/// refresh, no token on the wire.
public struct ResourceBoundary: Sendable, Hashable, CustomStringConvertible {
    /// The resources whose URLs are inside, as given.
    public let resources: [URL]
    private let prefixes: [(origin: Origin, path: String)]

    /// The boundary of `resources`: a URL is inside when it is inside any of them.
    public init(_ resources: [URL]) {
        self.resources = resources
        self.prefixes = resources.compactMap { resource in
            Origin(resource).map { ($0, Self.directory(of: resource.path)) }
        }
    }

    /// The boundary of one resource.
    public init(_ resource: URL) { self.init([resource]) }

    /// Whether a token for these resources may be sent to `url`.
    public func contains(_ url: URL) -> Bool {
        guard let origin = Origin(url) else { return false }
        let path = url.path.isEmpty ? "/" : url.path
        return prefixes.contains { prefix in
            guard prefix.origin == origin else { return false }
            // `/mcp/` is the prefix of `/mcp/…`; `/mcp` itself is inside too.
            return prefix.path == "/" || path.hasPrefix(prefix.path) || path + "/" == prefix.path
        }
    }

    /// The resources, for messages.
    public var description: String { resources.map(\.redactedForDisplay).joined(separator: ", ") }

    /// `path` ending in exactly one `/`, so that `/mcp` does not contain `/mcpx`.
    private static func directory(of path: String) -> String {
        guard !path.isEmpty, path != "/" else { return "/" }
        return path.hasSuffix("/") ? path : path + "/"
    }

    /// Whether both name the same resources.
    public static func == (lhs: ResourceBoundary, rhs: ResourceBoundary) -> Bool { lhs.resources == rhs.resources }
    /// Hashes the resources.
    public func hash(into hasher: inout Hasher) { hasher.combine(resources) }
}
