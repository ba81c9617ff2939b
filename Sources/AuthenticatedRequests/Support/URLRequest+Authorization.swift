import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLRequest {
    /// Sets the `Authorization` header to `value`, replacing the header under any spelling.
    package mutating func setAuthorization(_ value: String) {
        setHeader("Authorization", to: value)
    }

    /// Sets the header `name` to `value`, replacing the header under any spelling.
    ///
    /// The result is the same as `setValue(value, forHTTPHeaderField: name)`. On Linux that call
    /// is most of an authenticator's cost per request: swift-corelibs-foundation checks the value
    /// one `Character` at a time and capitalizes the name through Foundation, about 18,000
    /// instructions per call for a bearer token (callgrind; ~2 µs), and 25 µs for a 600-byte DPoP
    /// proof. A value of printable ASCII, which every RFC 6750 token and every JWS is, cannot fail
    /// that check, so here it goes straight into the header dictionary; any other value still
    /// takes `setValue` and its rules (it drops a value with a line break). On Apple platforms
    /// `setValue` is used as is.
    package mutating func setHeader(_ name: String, to value: String) {
        #if canImport(FoundationNetworking)
            guard value.isPrintableASCII else {
                setValue(value, forHTTPHeaderField: name)
                return
            }
            setHeader(name, toPrintableASCII: value)
        #else
            setValue(value, forHTTPHeaderField: name)
        #endif
    }

    /// Sets the header `name` to `value`, which the caller built of printable ASCII (a JWS in
    /// compact form, say), replacing the header under any spelling; on Linux without checking it
    /// again (see ``setHeader(_:to:)``).
    package mutating func setHeader(_ name: String, toPrintableASCII value: String) {
        assert(value.isPrintableASCII, "a header value of printable ASCII")
        #if canImport(FoundationNetworking)
            var fields = allHTTPHeaderFields ?? [:]
            if !fields.isEmpty {
                for existing in fields.keys where existing.isEqualIgnoringASCIICase(to: name) {
                    fields[existing] = nil
                }
            }
            fields[name] = value
            allHTTPHeaderFields = fields
        #else
            setValue(value, forHTTPHeaderField: name)
        #endif
    }
}
