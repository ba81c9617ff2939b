import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLRequest {
    /// Sets the `Authorization` header to `value`, replacing the header under any spelling.
    ///
    /// The result is the same as `setValue(value, forHTTPHeaderField: "Authorization")`. On Linux
    /// that call is most of an authenticator's cost per request: swift-corelibs-foundation checks
    /// the value one `Character` at a time and capitalizes the name through Foundation, about
    /// 18,000 instructions per call (callgrind; ~2 µs). A value of printable ASCII, which every
    /// RFC 6750 token is, cannot fail that check, so here it goes straight into the header
    /// dictionary; any other value still takes `setValue` and its rules (it drops a value with a
    /// line break). On Apple platforms `setValue` is used as is.
    package mutating func setAuthorization(_ value: String) {
        #if canImport(FoundationNetworking)
            guard value.isPrintableASCII else {
                setValue(value, forHTTPHeaderField: "Authorization")
                return
            }
            var fields = allHTTPHeaderFields ?? [:]
            if !fields.isEmpty {
                for name in fields.keys where name.isEqualIgnoringASCIICase(to: "Authorization") {
                    fields[name] = nil
                }
            }
            fields["Authorization"] = value
            allHTTPHeaderFields = fields
        #else
            setValue(value, forHTTPHeaderField: "Authorization")
        #endif
    }
}
