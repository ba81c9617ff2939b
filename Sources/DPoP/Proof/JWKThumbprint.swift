import AuthenticatedRequests
import Crypto
import Foundation

/// The JWK SHA-256 thumbprint (RFC 7638): what `cnf.jkt` names.
enum JWKThumbprint {
    /// The members that go into the thumbprint, by key type (RFC 7638 §3.2, RFC 8037 §2).
    static func requiredMembers(of jwk: [String: String]) -> [String] {
        switch jwk["kty"] {
        case "EC": ["crv", "kty", "x", "y"]
        case "OKP": ["crv", "kty", "x"]
        case "RSA": ["e", "kty", "n"]
        default: jwk.keys.sorted()
        }
    }

    /// The JSON of the required members, in lexicographic order without whitespace (§3.3).
    static func canonicalJSON(of jwk: [String: String]) -> String {
        let members = requiredMembers(of: jwk).map { name in
            JSONText.string(name) + ":" + JSONText.string(jwk[name] ?? "")
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// BASE64URL(SHA-256(canonical JSON)).
    static func sha256(of jwk: [String: String]) -> String {
        Base64URL.encode(SHA256.hash(data: Data(canonicalJSON(of: jwk).utf8)))
    }
}

/// JSON text for the few values a proof has, written directly: a proof is made for every request.
enum JSONText {
    /// `value` as a JSON string, with quotes, backslashes and control characters escaped.
    static func string(_ value: String) -> String {
        // Most values (identifiers, URLs, base64url) need no escape: copy them whole.
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            return "\"" + value + "\""
        }
        var result = "\""
        result.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
