import Foundation

/// Removes secrets from text before it reaches a message, a description or a log.
package enum Redaction {
    /// What stands in for a removed secret.
    package static let placeholder = "<redacted>"

    /// Parameter and field names whose values are secrets, in JSON bodies and form bodies alike.
    package static let secretNames: Set<String> = [
        "access_token", "refresh_token", "id_token", "client_secret", "code", "code_verifier",
        "device_code", "user_code", "password", "assertion", "client_assertion", "subject_token",
        "actor_token", "token", "state", "issued_token",
    ]

    /// A bounded, redacted preview of a body: at most `limit` bytes, decoded leniently, with
    /// secret values replaced by the placeholder.
    package static func snippet(of body: Data, limit: Int = 256) -> String {
        let prefix = body.prefix(limit)
        var text = String(decoding: prefix, as: UTF8.self)
        text = redact(text)
        if body.count > limit { text += "… (\(body.count) bytes)" }
        return text
    }

    /// `text` with every secret value removed: JSON `"name": "value"` pairs, form
    /// `name=value` pairs, and `Bearer …` credentials.
    package static func redact(_ text: String) -> String {
        var result = text
        let names = secretNames.sorted { $0.count > $1.count }
            .map { NSRegularExpression.escapedPattern(for: $0) }
            .joined(separator: "|")
        let patterns = [
            // "name" : "value"  (JSON; value may contain escaped quotes)
            "(\"(?:\(names))\"\\s*:\\s*)\"(?:[^\"\\\\]|\\\\.)*\"?",
            // name=value  (form bodies and query strings)
            "((?:^|[?&\\s])(?:\(names))=)[^&\\s]*",
            // Bearer credentials in headers or challenges
            "((?i:bearer|basic|dpop)\\s+)[A-Za-z0-9\\-._~+/]+=*",
        ]
        for pattern in patterns {
            guard let regex = try? NSRegularExpression(pattern: pattern) else { continue }
            let range = NSRange(result.startIndex..., in: result)
            result = regex.stringByReplacingMatches(
                in: result,
                range: range,
                withTemplate: "$1\(placeholder)"
            )
        }
        return result
    }

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
