/// One challenge of a `WWW-Authenticate` header (RFC 9110 §11.6.1), e.g.
/// `Bearer realm="api", error="invalid_token"`.
///
/// Parsing is lenient: scheme and parameter names are compared case-insensitively, and
/// parameters a server invents are kept.
public struct AuthenticationChallenge: Hashable, Sendable {
    /// The scheme, as sent (compare with ``hasScheme(_:)``).
    public let scheme: String
    /// The parameters, keyed by lowercased name.
    public let parameters: [String: String]

    /// Whether the scheme is `name`, ignoring case.
    public func hasScheme(_ name: String) -> Bool {
        scheme.isEqualIgnoringASCIICase(to: name)
    }

    /// The `error` parameter (RFC 6750 §3), if any.
    public var error: String? { parameters["error"] }

    /// Parses every challenge of a `WWW-Authenticate` header value.
    public static func parse(_ header: String) -> [AuthenticationChallenge] {
        var scanner = ChallengeScanner(Array(header.unicodeScalars))
        var challenges: [AuthenticationChallenge] = []
        var scheme: String?
        var parameters: [String: String] = [:]

        func finish() {
            if let scheme { challenges.append(AuthenticationChallenge(scheme: scheme, parameters: parameters)) }
            scheme = nil
            parameters = [:]
        }

        while !scanner.isAtEnd {
            scanner.skip { $0 == " " || $0 == "\t" || $0 == "," }
            guard let token = scanner.token() else {
                scanner.advance()
                continue
            }
            scanner.skip { $0 == " " || $0 == "\t" }
            if scanner.peek == "=" {
                scanner.advance()
                scanner.skip { $0 == " " || $0 == "\t" }
                // token68 (e.g. `Basic abc==`) has trailing '='; a parameter has a value.
                if scanner.isAtEnd || scanner.peek == "," || scanner.peek == "=" {
                    scanner.skip { $0 == "=" }
                    if scheme == nil { scheme = token }
                    continue
                }
                let value = scanner.peek == "\"" ? scanner.quoted() : (scanner.token() ?? "")
                if scheme != nil { parameters[token.lowercased()] = value }
            } else {
                finish()
                scheme = token
            }
        }
        finish()
        return challenges
    }
}

private struct ChallengeScanner {
    let scalars: [Unicode.Scalar]
    var index = 0

    init(_ scalars: [Unicode.Scalar]) {
        self.scalars = scalars
    }

    var isAtEnd: Bool { index >= scalars.count }
    var peek: Unicode.Scalar? { isAtEnd ? nil : scalars[index] }

    mutating func advance() { index += 1 }

    mutating func skip(while predicate: (Unicode.Scalar) -> Bool) {
        while let scalar = peek, predicate(scalar) { index += 1 }
    }

    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": return true
        default: return "!#$%&'*+-.^_`|~/".unicodeScalars.contains(scalar)
        }
    }

    mutating func token() -> String? {
        let start = index
        skip(while: Self.isTokenCharacter)
        guard index > start else { return nil }
        return String(String.UnicodeScalarView(scalars[start..<index]))
    }

    mutating func quoted() -> String {
        advance()
        var value = String.UnicodeScalarView()
        while let scalar = peek, scalar != "\"" {
            if scalar == "\\" {
                advance()
                if let escaped = peek { value.append(escaped) }
            } else {
                value.append(scalar)
            }
            advance()
        }
        advance()
        return String(value)
    }
}
