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
/// The path is compared as the server will read it, not as written: percent-encoded unreserved
/// characters are decoded and dot segments removed (RFC 3986 §6.2.2 and §5.2.4), so
/// `https://api.example.com/mcp/../admin` and `https://api.example.com/mcp/%2e%2e/admin` are
/// outside (they reach `/admin`), and `https://api.example.com/mcp/./tools` is inside. A path that
/// servers read in more than one way is outside whatever it looks like: an encoded `/` or `\`
/// (`%2F`, `%5C`), a raw `\`, an encoded NUL, a dot segment with parameters (`/..;/`), or a
/// double-encoded dot or slash (`%252e`).
///
/// An ``OAuthFlow`` that names its boundary (``OAuthFlow/resourceBoundary``) makes its
/// ``OAuthAuthenticator`` refuse any URL outside it with
/// ``AuthenticationError/Code/foreignResource`` before anything is sent: no sign-in, no
/// refresh, no token on the wire.
public struct ResourceBoundary: Sendable, Hashable, CustomStringConvertible {
    /// The resources whose URLs are inside, as given.
    public let resources: [URL]
    private let prefixes: [(origin: Origin, path: String)]

    /// The boundary of `resources`: a URL is inside when it is inside any of them. A resource
    /// whose own path is ambiguous (see above) contains nothing.
    public init(_ resources: [URL]) {
        self.resources = resources
        self.prefixes = resources.compactMap { resource in
            guard let origin = Origin(resource), let path = Self.normalizedPath(of: resource) else { return nil }
            return (origin, Self.directory(of: path))
        }
    }

    /// The boundary of one resource.
    public init(_ resource: URL) { self.init([resource]) }

    /// Whether a token for these resources may be sent to `url`: its origin is a resource's and
    /// its path, as the server reads it, is the resource's path or below it.
    public func contains(_ url: URL) -> Bool {
        guard let origin = Origin(url), let path = Self.normalizedPath(of: url) else { return false }
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

    /// The path of `url` as a server reads it: unreserved characters decoded, other escapes in
    /// upper case, dot segments removed; `/` for an empty path. `nil` for a path that servers
    /// read in more than one way.
    package static func normalizedPath(of url: URL) -> String? {
        let written =
            URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path(percentEncoded: true)
        guard let decoded = decodingUnreserved(written) else { return nil }
        let segments = decoded.split(separator: "/", omittingEmptySubsequences: false)
        for segment in segments {
            // `..;x` and `.;x`: Tomcat and others drop the parameters and then resolve the dots.
            let name = segment.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            if segment.contains(";"), name == "." || name == ".." { return nil }
        }
        let path = removingDotSegments(decoded)
        return path.isEmpty ? "/" : path
    }

    /// `path` with `%XX` escapes of unreserved characters decoded and the others upper-cased;
    /// `nil` for a malformed escape or one that servers read in more than one way.
    private static func decodingUnreserved(_ path: String) -> String? {
        var bytes = Array(path.utf8)
        if !bytes.contains(UInt8(ascii: "%")) {
            return bytes.contains(UInt8(ascii: "\\")) ? nil : path
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\") { return nil }
            guard byte == UInt8(ascii: "%") else {
                output.append(byte)
                index += 1
                continue
            }
            guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            else { return nil }
            let value = high << 4 | low
            switch value {
            case UInt8(ascii: "/"), UInt8(ascii: "\\"), 0:
                return nil
            case UInt8(ascii: "%"):
                // `%25` followed by an escape of a dot, slash or backslash: double-encoded.
                if index + 4 < bytes.count, let nextHigh = hexValue(bytes[index + 3]),
                    let nextLow = hexValue(bytes[index + 4]),
                    [UInt8(ascii: "."), UInt8(ascii: "/"), UInt8(ascii: "\\")].contains(nextHigh << 4 | nextLow)
                {
                    return nil
                }
                output.append(contentsOf: [UInt8(ascii: "%"), UInt8(ascii: "2"), UInt8(ascii: "5")])
            case _ where isUnreserved(value):
                output.append(value)
            default:
                output.append(UInt8(ascii: "%"))
                output.append(upperHex(high))
                output.append(upperHex(low))
            }
            index += 3
        }
        bytes = output
        return String(decoding: bytes, as: UTF8.self)
    }

    /// RFC 3986 §5.2.4's remove_dot_segments.
    package static func removingDotSegments(_ path: String) -> String {
        var input = Substring(path)
        var output: [Substring] = []
        var trailingSlash = false
        let absolute = input.hasPrefix("/")
        if absolute { input = input.dropFirst() }
        let segments = input.split(separator: "/", omittingEmptySubsequences: false)
        for (position, segment) in segments.enumerated() {
            let last = position == segments.count - 1
            switch segment {
            case ".":
                trailingSlash = last
            case "..":
                if !output.isEmpty { output.removeLast() }
                trailingSlash = last
            default:
                output.append(segment)
                trailingSlash = false
            }
        }
        var result = (absolute ? "/" : "") + output.joined(separator: "/")
        if trailingSlash, !result.hasSuffix("/") { result += "/" }
        return result
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return true
        default: return false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func upperHex(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// Whether both name the same resources.
    public static func == (lhs: ResourceBoundary, rhs: ResourceBoundary) -> Bool { lhs.resources == rhs.resources }
    /// Hashes the resources.
    public func hash(into hasher: inout Hasher) { hasher.combine(resources) }
}
