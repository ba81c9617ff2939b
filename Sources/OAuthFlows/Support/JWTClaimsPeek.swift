import AuthenticatedRequests
import Foundation

/// The time claims of a JWT read without verifying it, for deciding when to ask for a new one
/// (whoever receives the JWT verifies it): `exp` and `iat` as dates, `nil` when absent or not
/// a plausible number of seconds.
struct JWTClaimsPeek {
    /// `exp`.
    let expiry: Date?
    /// `iat`.
    let issuedAt: Date?
    /// `cnf.x5t#S256`: the client certificate the token is bound to (RFC 8705 §3.1).
    let certificateThumbprint: String?
    /// Whether `cnf` has `jkt`: the token is bound to a DPoP key (RFC 9449 §6.1).
    let isBoundToKey: Bool

    /// `nil` when `token` is not three dot-separated parts with a JSON object in the middle.
    init?(_ token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
            let claims = (try? JSONValue(parsing: payload))?.objectValue
        else { return nil }
        func date(_ name: String) -> Date? {
            guard case .number(let seconds)? = claims[name], seconds.isFinite, seconds > 0, seconds < 1e11 else {
                return nil
            }
            return Date(timeIntervalSince1970: seconds)
        }
        expiry = date("exp")
        issuedAt = date("iat")
        let confirmation = claims["cnf"]?.objectValue
        certificateThumbprint = confirmation?["x5t#S256"]?.stringValue
        isBoundToKey = confirmation?["jkt"] != nil
    }
}
