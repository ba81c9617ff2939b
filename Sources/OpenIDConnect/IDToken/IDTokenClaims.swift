import AuthenticatedRequests
import Foundation

/// The claims of a validated ID token: who signed in, when, and what the provider says about them.
public struct IDTokenClaims: Sendable, Hashable, CustomStringConvertible {
    /// `iss`.
    public let issuer: String
    /// `sub`: the user's identifier at the provider, stable and unique per issuer.
    public let subject: String
    /// `aud`.
    public let audiences: [String]
    /// `exp`.
    public let expiresAt: Date
    /// `iat`.
    public let issuedAt: Date
    /// `auth_time`: when the user authenticated.
    public let authTime: Date?
    /// `nonce`.
    public let nonce: String?
    /// `azp`.
    public let authorizedParty: String?
    /// Every claim as sent, including those above.
    public let raw: [String: JSONValue]

    /// `name`.
    public var name: String? { raw["name"]?.stringValue }
    /// `email`.
    public var email: String? { raw["email"]?.stringValue }
    /// `email_verified`.
    public var emailVerified: Bool? {
        if case .bool(let value)? = raw["email_verified"] { return value }
        return nil
    }
    /// `preferred_username`.
    public var preferredUsername: String? { raw["preferred_username"]?.stringValue }

    /// Reads the registered claims of `raw`, checking their types.
    ///
    /// - Throws: ``IDTokenValidationError`` naming the claim that is missing or mistyped.
    init(_ raw: [String: JSONValue]) throws {
        func string(_ name: String, _ rule: IDTokenValidationError.Rule) throws -> String? {
            switch raw[name] {
            case nil: return nil
            case .string(let value)?: return value
            default: throw IDTokenValidationError(rule, "The ID token's \(name) is not a string.")
            }
        }
        func date(_ name: String, _ rule: IDTokenValidationError.Rule) throws -> Date? {
            switch raw[name] {
            case nil: return nil
            case .number(let value)? where value.isFinite && abs(value) < 1e11:
                return Date(timeIntervalSince1970: value)
            default: throw IDTokenValidationError(rule, "The ID token's \(name) is not a number of seconds.")
            }
        }
        guard let issuer = try string("iss", .issuer) else {
            throw IDTokenValidationError(.issuer, "The ID token has no iss.")
        }
        guard let subject = try string("sub", .subject), !subject.isEmpty else {
            throw IDTokenValidationError(.subject, "The ID token has no sub.")
        }
        switch raw["aud"] {
        case .string(let value)?:
            audiences = [value]
        case .array(let values)? where values.allSatisfy({ $0.stringValue != nil }) && !values.isEmpty:
            audiences = values.compactMap(\.stringValue)
        default:
            throw IDTokenValidationError(
                .audience, "The ID token's aud is missing or not a string or array of strings.")
        }
        guard let expiresAt = try date("exp", .expired) else {
            throw IDTokenValidationError(.expired, "The ID token has no exp.")
        }
        guard let issuedAt = try date("iat", .issuedAt) else {
            throw IDTokenValidationError(.issuedAt, "The ID token has no iat.")
        }
        self.issuer = issuer
        self.subject = subject
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
        self.authTime = try date("auth_time", .authTime)
        self.nonce = try string("nonce", .nonce)
        self.authorizedParty = try string("azp", .authorizedParty)
        self.raw = raw
    }

    /// The claims of the ID token `idToken` that was validated when it was stored, read again
    /// without checking its signature (a `TokenStore` is trusted with what it keeps).
    public init(storedIDToken idToken: String) throws {
        try self.init(CompactJWS(idToken).claims)
    }

    /// `IDTokenClaims(iss: …, sub: …)`: no other claim (they may be personal data).
    public var description: String { "IDTokenClaims(iss: \(issuer), sub: \(subject))" }
}

extension OAuthToken {
    /// The claims of this token's ID token, which the OpenID Connect sign-in validated before
    /// the token was stored; `nil` when there is none.
    public var idTokenClaims: IDTokenClaims? {
        idToken.flatMap { try? IDTokenClaims(storedIDToken: $0) }
    }
}
