import Foundation

/// An OAuth 2.0 access token with what came with it (RFC 6749 §5.1): the credential of
/// ``BearerTokenAuthenticator``.
///
/// Expiry is an absolute date, computed when the token was issued, so a stored token stays
/// correct across launches. Descriptions never show the tokens.
public struct OAuthToken: AuthenticationCredential, Hashable {
    /// `access_token`: the credential sent to resource servers.
    public var accessToken: String
    /// `token_type`, as the server spelled it (e.g. `Bearer`, `bearer`).
    public var tokenType: String
    /// When the access token expires, from `expires_in`; `nil` when the server did not say
    /// (then it is used until a resource server rejects it).
    public var expiresAt: Date?
    /// `refresh_token`, if the server issued one.
    public var refreshToken: String?
    /// `scope`: the space-delimited scope granted.
    public var scope: String?
    /// `id_token` (OpenID Connect), if issued.
    public var idToken: String?
    /// Every other field of the token response, kept as sent.
    public var additionalFields: [String: JSONValue]

    /// Creates a token.
    public init(
        accessToken: String,
        tokenType: String = "Bearer",
        expiresAt: Date? = nil,
        refreshToken: String? = nil,
        scope: String? = nil,
        idToken: String? = nil,
        additionalFields: [String: JSONValue] = [:]
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresAt = expiresAt
        self.refreshToken = refreshToken
        self.scope = scope
        self.idToken = idToken
        self.additionalFields = additionalFields
    }

    /// The granted scopes, split on spaces.
    public var scopes: [String] {
        scope?.split(separator: " ").map(String.init) ?? []
    }

    /// Whether the token is a bearer token, whatever the server's casing.
    public var isBearer: Bool {
        tokenType.isEqualIgnoringASCIICase(to: "Bearer")
    }

    /// `true` when the token has expired by `date`; a token of unknown expiry never does.
    public func requiresRefresh(at date: Date) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= date
    }

    private enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresAt = "expires_at"
        case refreshToken = "refresh_token"
        case scope
        case idToken = "id_token"
        case additionalFields = "additional_fields"
    }

    /// Decodes a stored token (expiry in seconds since 1970).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try container.decode(String.self, forKey: .accessToken)
        tokenType = try container.decodeIfPresent(String.self, forKey: .tokenType) ?? "Bearer"
        expiresAt = try container.decodeIfPresent(Double.self, forKey: .expiresAt)
            .map(Date.init(timeIntervalSince1970:))
        refreshToken = try container.decodeIfPresent(String.self, forKey: .refreshToken)
        scope = try container.decodeIfPresent(String.self, forKey: .scope)
        idToken = try container.decodeIfPresent(String.self, forKey: .idToken)
        additionalFields = try container.decodeIfPresent([String: JSONValue].self, forKey: .additionalFields) ?? [:]
    }

    /// Encodes the token for a store (expiry in seconds since 1970).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(accessToken, forKey: .accessToken)
        try container.encode(tokenType, forKey: .tokenType)
        try container.encodeIfPresent(expiresAt?.timeIntervalSince1970, forKey: .expiresAt)
        try container.encodeIfPresent(refreshToken, forKey: .refreshToken)
        try container.encodeIfPresent(scope, forKey: .scope)
        try container.encodeIfPresent(idToken, forKey: .idToken)
        if !additionalFields.isEmpty { try container.encode(additionalFields, forKey: .additionalFields) }
    }
}

extension OAuthToken: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The token's shape, with every secret redacted.
    public var description: String {
        var parts = [
            "tokenType: \(tokenType)",
            "accessToken: \(Redaction.describe(accessToken))",
            "refreshToken: \(Redaction.describe(refreshToken))",
        ]
        parts.append("expiresAt: \(expiresAt.map { "\($0)" } ?? "unknown")")
        if let scope { parts.append("scope: \(scope)") }
        if idToken != nil { parts.append("idToken: \(Redaction.describe(idToken))") }
        if !additionalFields.isEmpty {
            parts.append("additionalFields: \(additionalFields.keys.sorted())")
        }
        return "OAuthToken(\(parts.joined(separator: ", ")))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror without secrets, so `dump` and debuggers do not show them.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "tokenType": tokenType,
                "accessToken": Redaction.describe(accessToken),
                "refreshToken": Redaction.describe(refreshToken),
                "expiresAt": expiresAt as Any,
                "scope": scope as Any,
            ],
            displayStyle: .struct
        )
    }
}
