import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The origin of a URL (RFC 6454): scheme, host and port, with default ports filled in.
package struct Origin: Hashable, Sendable {
    package let scheme: String
    package let host: String
    package let port: Int

    /// The origin of `url`, or `nil` when it has no scheme or host.
    package init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else {
            return nil
        }
        self.scheme = scheme
        self.host = host
        switch (url.port, scheme) {
        case (let port?, _): self.port = port
        case (nil, "https"): self.port = 443
        case (nil, "http"): self.port = 80
        default: self.port = -1
        }
    }

    /// `https://host:port`, for messages.
    package var display: String { "\(scheme)://\(authority)" }

    /// `host:port` (`[::1]:8080` for IPv6), for messages.
    package var authority: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return port < 0 ? shownHost : "\(shownHost):\(port)"
    }
}

extension URL {
    /// Whether the host is a loopback address (`localhost`, `127.0.0.0/8`, `::1`).
    package var isLoopback: Bool {
        // The common spellings first, as written: this runs for every request to a loopback
        // `http` URL, and `host` percent-decodes (about 400 instructions on Linux). A host that
        // reads `127.0.0.1` as written reads the same decoded.
        if let written = host(percentEncoded: true),
            written == "127.0.0.1" || written == "localhost" || written == "::1"
        {
            return true
        }
        guard let original = host else { return false }
        var host = original.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127"
            && octets.allSatisfy { UInt8($0) != nil }
    }

    /// Whether a secret may be sent to this URL: `https`, or plain `http` to a loopback address.
    package var isSafeForSecrets: Bool {
        guard let scheme else { return false }
        if scheme.isEqualIgnoringASCIICase(to: "https") { return true }
        return scheme.isEqualIgnoringASCIICase(to: "http") && isLoopback
    }

    /// The URL without query, fragment or user info: safe to show in messages.
    package var redactedForDisplay: String {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: false) else {
            return "<url>"
        }
        components.query = nil
        components.fragment = nil
        components.user = nil
        components.password = nil
        return components.string ?? "<url>"
    }
}

extension URLRequest {
    /// The headers that carry credentials, removed on a cross-origin redirect and from
    /// requests kept in errors.
    package static let credentialHeaderNames = ["Authorization", "Proxy-Authorization", "DPoP", "Cookie"]

    /// A copy of the request without any header that carries a credential.
    package func removingCredentialHeaders() -> URLRequest {
        var copy = self
        for name in Self.credentialHeaderNames where copy.value(forHTTPHeaderField: name) != nil {
            copy.setValue(nil, forHTTPHeaderField: name)
        }
        return copy
    }
}
