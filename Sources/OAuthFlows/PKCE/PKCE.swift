import AuthenticatedRequests
import Crypto
import Foundation

/// Proof Key for Code Exchange (RFC 7636): a one-time secret verifier and the challenge derived
/// from it.
///
/// The verifier has 43 to 128 unreserved characters from the system CSPRNG (64 by default); the
/// challenge method is `S256` unless `plain` is asked for explicitly.
public struct PKCE: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `code_challenge_method`.
    public struct Method: RawRepresentable, Hashable, Sendable {
        /// The wire value.
        public let rawValue: String
        /// Creates a method from its wire value.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// `S256`: the challenge is BASE64URL(SHA-256(verifier)). The default.
        public static let s256 = Method(rawValue: "S256")
        /// `plain`: the challenge is the verifier. Only for servers that cannot do `S256`.
        public static let plain = Method(rawValue: "plain")
    }

    /// The characters a verifier may contain (RFC 7636 §4.1: unreserved).
    static let unreserved = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// `code_verifier`: sent with the token request; never shown in descriptions.
    public let verifier: String
    /// `code_challenge_method`.
    public let method: Method
    /// `code_challenge`: sent with the authorization request.
    public let challenge: String

    /// A fresh verifier of `length` characters (43...128) from the system CSPRNG.
    /// - Throws: ``PKCEError`` when `length` is outside 43...128.
    public init(length: Int = 64, method: Method = .s256) throws {
        guard (43...128).contains(length) else { throw PKCEError(length: length) }
        var generator = SystemRandomNumberGenerator()
        var verifier = ""
        verifier.reserveCapacity(length)
        for _ in 0..<length {
            verifier.append(Self.unreserved[Int(generator.next(upperBound: UInt64(Self.unreserved.count)))])
        }
        try self.init(verifier: verifier, method: method)
    }

    /// A given verifier (e.g. restored after an app restart).
    /// - Throws: ``PKCEError`` unless it has 43...128 unreserved characters.
    public init(verifier: String, method: Method = .s256) throws {
        guard (43...128).contains(verifier.count), verifier.allSatisfy(Self.unreserved.contains) else {
            throw PKCEError(length: verifier.count)
        }
        self.verifier = verifier
        self.method = method
        self.challenge = method == .plain ? verifier : Self.s256Challenge(for: verifier)
    }

    /// BASE64URL-ENCODE(SHA256(ASCII(verifier))), without padding (RFC 7636 §4.2).
    static func s256Challenge(for verifier: String) -> String {
        Data(SHA256.hash(data: Data(verifier.utf8))).base64URLEncodedString()
    }

    /// The method and challenge; the verifier is redacted.
    public var description: String {
        "PKCE(method: \(method.rawValue), challenge: \(challenge == verifier ? Redaction.placeholder : challenge), "
            + "verifier: \(Redaction.placeholder))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror without the verifier.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// A PKCE verifier of the wrong length or with characters outside the unreserved set.
public struct PKCEError: Error, CustomStringConvertible {
    /// The verifier's length.
    public let length: Int
    /// What is wrong.
    public var description: String {
        "PKCEError: a code verifier must have 43 to 128 unreserved characters (got \(length) characters or an invalid one)."
    }
}

extension Data {
    /// Base64url without padding (RFC 4648 §5).
    package func base64URLEncodedString() -> String {
        base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
