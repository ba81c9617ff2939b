import Foundation

/// Removes secrets from text before it reaches a message, a description or a log.
package enum Redaction {
    /// What stands in for a removed secret.
    package static let placeholder = "<redacted>"

    /// Parameter and field names whose values are secrets, in JSON bodies and form bodies alike.
    package static let secretNames: Set<String> = [
        "access_token", "refresh_token", "id_token", "client_secret", "code", "code_verifier",
        "device_code", "user_code", "password", "assertion", "client_assertion", "subject_token",
        "actor_token", "token", "state", "issued_token", "registration_access_token", "initial_access_token",
        // CIBA: the request's identifier, the ping's bearer, and the hints that are tokens.
        "auth_req_id", "client_notification_token", "login_hint_token", "id_token_hint",
    ]

    /// A bounded, redacted preview of a body: at most `limit` bytes, decoded leniently, with
    /// secret values replaced by the placeholder, and every one of `secrets` removed wherever it
    /// appears.
    package static func snippet(of body: Data, limit: Int = 256, removing secrets: [String] = []) -> String {
        // Redact the whole body before cutting it, so a secret that straddles the cut is still found.
        let whole = body.count <= 64 * 1024 ? body : body.prefix(64 * 1024)
        var text = redact(String(decoding: whole, as: UTF8.self), removing: secrets)
        if text.utf8.count > limit {
            text = String(decoding: text.utf8.prefix(limit), as: UTF8.self)
        }
        if body.count > limit { text += "… (\(body.count) bytes)" }
        return text
    }

    /// `text` with every secret value removed: the values of secret-named fields (JSON
    /// `"name": "value"` pairs and form or query `name=value` pairs, the names compared without
    /// case, `_` or `-`, so `access_token`, `accessToken` and `ACCESS-TOKEN` are alike),
    /// `Bearer`, `Basic` and `DPoP` credentials, and each of `secrets` wherever it appears, also
    /// percent-encoded or JSON-escaped.
    package static func redact(_ text: String, removing secrets: [String] = []) -> String {
        var result = text
        for secret in secrets where secret.utf8.count >= minimumSecretLength {
            for variant in variants(of: secret) where result.contains(variant) {
                result = result.replacingOccurrences(of: variant, with: placeholder)
            }
        }
        for regex in patterns {
            let range = NSRange(result.startIndex..., in: result)
            result = regex.stringByReplacingMatches(in: result, range: range, withTemplate: "$1\(placeholder)")
        }
        return result
    }

    /// Shorter values are not searched for: replacing every `ab` in a message would destroy it,
    /// and such a value is no secret worth the name.
    private static let minimumSecretLength = 4

    /// The spellings under which a server may echo `secret`: as sent, form-encoded, JSON-escaped.
    private static func variants(of secret: String) -> [String] {
        var variants = [secret]
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        if let encoded = secret.addingPercentEncoding(withAllowedCharacters: allowed), encoded != secret {
            variants.append(encoded)
            variants.append(encoded.replacingOccurrences(of: "%20", with: "+"))
        }
        let escaped = secret.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "/", with: "\\/")
        if escaped != secret { variants.append(escaped) }
        return variants
    }

    /// One-word names that are also ordinary words of other vocabularies (`Code=-1004` in an
    /// `NSError`, `State=running`): matched only as OAuth spells them, in lowercase.
    private static let exactCaseNames: Set<String> = ["code", "state", "token"]

    /// The name patterns: `access_token` matches `access_token`, `accessToken`, `ACCESS-TOKEN`;
    /// the words of ``exactCaseNames`` match only in lowercase.
    private static let patterns: [NSRegularExpression] = {
        let names = secretNames.sorted { $0.count > $1.count }
            .map { name in
                guard !exactCaseNames.contains(name) else { return "(?-i:\(name))" }
                return name.split(separator: "_").map { NSRegularExpression.escapedPattern(for: String($0)) }
                    .joined(separator: "[_-]?")
            }
            .joined(separator: "|")
        let sources = [
            // "name" : "value"  (JSON; value may contain escaped quotes)
            "(\"(?:\(names))\"\\s*:\\s*)\"(?:[^\"\\\\]|\\\\.)*\"?",
            // name=value  (form bodies and query strings)
            "((?:^|[?&;\\s\"'(<>])(?:\(names))=)[^&\\s\"'<>]*",
            // Bearer credentials in headers or challenges
            // (a token68, not the first auth-param of a challenge such as `Basic realm="x"`)
            "((?:bearer|basic|dpop)\\s+)(?![A-Za-z0-9\\-._~+/]+\\s*=\\s*[^=\\s,])[A-Za-z0-9\\-._~+/]+=*",
        ]
        return sources.compactMap { try? NSRegularExpression(pattern: $0, options: [.caseInsensitive]) }
    }()

    /// A short, non-reversible hint for a secret: whether it is present and its length.
    package static func describe(_ secret: String?) -> String {
        guard let secret else { return "nil" }
        return "\(placeholder)(\(secret.count) chars)"
    }
}

extension ResourceError: CustomReflectable {
    /// A mirror showing only the redacted description, so `dump` and debuggers do not show the
    /// raw request or response.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

extension AuthenticationError: CustomReflectable {
    /// A mirror showing only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

extension OAuthError: CustomReflectable {
    /// A mirror showing only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

extension TokenStoreError: CustomReflectable {
    /// A mirror showing only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

extension AuthenticationEvent: CustomReflectable {
    /// A mirror showing only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
