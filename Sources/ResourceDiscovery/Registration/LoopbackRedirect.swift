import AuthenticatedRequests
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Loopback redirect URIs (RFC 8252 §7.3) in dynamic registration: a URI without a port means
/// "any port" to the RFC, but some servers compare redirect URIs exactly, port included (the MCP
/// Python SDK's among them). So the client registers the exact URI it will listen on: the port
/// is chosen when the client registers, kept with the registration, and listened on by every
/// later sign-in of that registration.
enum LoopbackRedirect {
    /// Whether `uri` is `http` to a loopback address without a port: one the client may pin.
    static func isUnpinned(_ uri: URL) -> Bool {
        uri.scheme?.lowercased() == "http" && uri.isLoopback && uri.port == nil
    }

    /// Whether `registered` is `requested`, or, for an unpinned `requested`, the same URI with a port.
    static func matches(_ requested: URL, registered: URL) -> Bool {
        if requested.absoluteString == registered.absoluteString { return true }
        guard isUnpinned(requested), registered.port != nil,
            var components = URLComponents(url: registered, resolvingAgainstBaseURL: false)
        else { return false }
        components.port = nil
        return components.url?.absoluteString == requested.absoluteString
    }

    /// Whether every requested URI is among the registered ones (an unpinned one with any port).
    static func covers(_ registered: [URL], _ requested: [URL]) -> Bool {
        requested.allSatisfy { wanted in registered.contains { matches(wanted, registered: $0) } }
    }

    /// `uris` with each unpinned one given a free loopback port, chosen now (one that could not
    /// be had leaves its URI as it is).
    static func pinning(_ uris: [URL]) -> [URL] {
        uris.map { uri in
            guard isUnpinned(uri), let port = freePort(),
                var components = URLComponents(url: uri, resolvingAgainstBaseURL: false)
            else { return uri }
            components.port = port
            return components.url ?? uri
        }
    }

    /// The registered URI that `uri` stands for: itself, or for an unpinned `uri`, the registered
    /// one with its port.
    static func registered(_ uri: URL, among registered: [URL]) -> URL {
        guard isUnpinned(uri) else { return uri }
        return registered.first { matches(uri, registered: $0) } ?? uri
    }

    /// A TCP port on 127.0.0.1 that nobody listens on now (the system picks it), or `nil`.
    static func freePort() -> Int? {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
            #if canImport(Glibc)
                let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #else
                let descriptor = socket(AF_INET, SOCK_STREAM, 0)
            #endif
            guard descriptor >= 0 else { return nil }
            defer { close(descriptor) }
            var address = sockaddr_in()
            #if canImport(Darwin)
                address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
            #endif
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
            }
            guard bound == 0 else { return nil }
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            guard named == 0 else { return nil }
            let port = Int(UInt16(bigEndian: address.sin_port))
            return port > 0 ? port : nil
        #else
            return nil
        #endif
    }
}
