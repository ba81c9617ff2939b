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
    /// (then it is used until a resource server rejects it). Kept to 1/1024 s, so that it reads
    /// back from a store exactly as written.
    public var expiresAt: Date? { didSet { expiresAt = expiresAt.map(Self.storable) } }
    /// `refresh_token`, if the server issued one.
    public var refreshToken: String?
    /// `scope`: the space-delimited scope granted.
    public var scope: String?
    /// `id_token` (OpenID Connect), if issued.
    public var idToken: String?
    /// Every other field of the token response, kept as sent.
    public var additionalFields: [String: JSONValue]
    /// When the token was issued (when its request was sent); `nil` when unknown. With
    /// ``expiresAt`` it gives the token's lifetime, which bounds the refresh leeway. Kept to
    /// 1/1024 s, as ``expiresAt``.
    public var issuedAt: Date? { didSet { issuedAt = issuedAt.map(Self.storable) } }
    /// The key a `DPoP` token is bound to (RFC 9449): set when the token endpoint issued the token
    /// for a proof, kept in the store with the token, and used for every proof made with it and
    /// for its refresh. `nil` for bearer tokens.
    public var boundKey: BoundKey?
    /// The `x5t#S256` thumbprint (RFC 8705 §3.1) of the client certificate the token was issued
    /// over: set when the token endpoint was reached over mutual TLS and the token is not bound by
    /// DPoP. The authorization server binds such a token to that certificate, so the authenticator
    /// sends it only over a transport that presents the same certificate, and refreshes it first
    /// when the transport's certificate has been rotated. `nil` otherwise.
    public var certificateThumbprint: String?

    /// The largest part of a token's lifetime that the refresh leeway may take: a quarter.
    ///
    /// A token is refreshed `leeway` seconds before it expires (60 by default), but never earlier
    /// than three quarters into its life: a token that lives 8 seconds is refreshed 2 seconds
    /// before expiry, not on every request. Without ``issuedAt`` the leeway applies as given.
    public static let maximumLeewayFraction = 0.25

    /// Creates a token.
    public init(
        accessToken: String,
        tokenType: String = "Bearer",
        expiresAt: Date? = nil,
        refreshToken: String? = nil,
        scope: String? = nil,
        idToken: String? = nil,
        additionalFields: [String: JSONValue] = [:],
        issuedAt: Date? = nil,
        boundKey: BoundKey? = nil,
        certificateThumbprint: String? = nil
    ) {
        self.certificateThumbprint = certificateThumbprint
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresAt = expiresAt.map(Self.storable)
        self.refreshToken = refreshToken
        self.scope = scope
        self.idToken = idToken
        self.additionalFields = additionalFields
        self.issuedAt = issuedAt.map(Self.storable)
        self.boundKey = boundKey
    }

    /// `date` rounded to 1/1024 s: stored as seconds since 1970, such a date converts back to
    /// the same `Date` (an arbitrary one may come back one rounding step off).
    static func storable(_ date: Date) -> Date {
        Date(timeIntervalSinceReferenceDate: (date.timeIntervalSinceReferenceDate * 1024).rounded() / 1024)
    }

    /// The access token, the refresh token and the ID token: what is removed from error text.
    public var secretValues: [String] {
        [accessToken] + [refreshToken, idToken].compactMap { $0 }
    }

    /// The granted scopes, split on spaces.
    public var scopes: [String] {
        scope?.split(separator: " ").map(String.init) ?? []
    }

    /// Whether this is an access token, for a request's `Authorization` header: `false` for
    /// `token_type` `N_A`, which RFC 8693 §2.2.1 gives tokens that are not access tokens, and for
    /// a token exchange reply whose `issued_token_type` names a token that is not one (an ID-JAG,
    /// an ID token, a SAML assertion, a refresh token), whatever its `token_type` says: such a
    /// token is never sent as a bearer.
    public var isAccessToken: Bool {
        if tokenType.isEqualIgnoringASCIICase(to: "N_A") { return false }
        guard let issued = additionalFields["issued_token_type"]?.stringValue else { return true }
        return !Self.notAccessTokenTypes.contains(issued)
    }

    /// The RFC 8693 §3 token type URIs (and the ID-JAG's) of tokens that are not access tokens.
    static let notAccessTokenTypes: Set<String> = [
        "urn:ietf:params:oauth:token-type:id-jag", "urn:ietf:params:oauth:token-type:id_token",
        "urn:ietf:params:oauth:token-type:saml1", "urn:ietf:params:oauth:token-type:saml2",
        "urn:ietf:params:oauth:token-type:refresh_token",
    ]

    /// Whether the token is a bearer token, whatever the server's casing.
    public var isBearer: Bool {
        tokenType.isEqualIgnoringASCIICase(to: "Bearer")
    }

    /// `true` when the token has expired by `date`; a token of unknown expiry never does.
    public func requiresRefresh(at date: Date) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= date
    }

    /// `true` when the token expires within `leeway` of `now`, the leeway capped at
    /// ``maximumLeewayFraction`` of the token's lifetime when ``issuedAt`` is known.
    public func requiresRefresh(now: Date, leeway: TimeInterval) -> Bool {
        requiresRefresh(at: now.addingTimeInterval(effectiveLeeway(leeway)))
    }

    /// The leeway used for this token: `leeway`, at most a quarter of the token's lifetime.
    public func effectiveLeeway(_ leeway: TimeInterval) -> TimeInterval {
        guard let issuedAt, let expiresAt else { return leeway }
        let lifetime = expiresAt.timeIntervalSince(issuedAt)
        guard lifetime.isFinite else { return leeway }
        return Swift.max(0, Swift.min(leeway, lifetime * Self.maximumLeewayFraction))
    }

    private enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresAt = "expires_at"
        case refreshToken = "refresh_token"
        case scope
        case idToken = "id_token"
        case additionalFields = "additional_fields"
        case issuedAt = "issued_at"
        case boundKey = "bound_key"
        case certificateThumbprint = "x5t#S256"
    }

    /// Decodes a stored token (expiry in seconds since 1970).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try container.decode(String.self, forKey: .accessToken)
        tokenType = try container.decodeIfPresent(String.self, forKey: .tokenType) ?? "Bearer"
        expiresAt = try Self.decodeDate(container, .expiresAt)
        issuedAt = try Self.decodeDate(container, .issuedAt)
        refreshToken = try container.decodeIfPresent(String.self, forKey: .refreshToken)
        scope = try container.decodeIfPresent(String.self, forKey: .scope)
        idToken = try container.decodeIfPresent(String.self, forKey: .idToken)
        additionalFields = try container.decodeIfPresent([String: JSONValue].self, forKey: .additionalFields) ?? [:]
        boundKey = try container.decodeIfPresent(BoundKey.self, forKey: .boundKey)
        certificateThumbprint = try container.decodeIfPresent(String.self, forKey: .certificateThumbprint)
    }

    private static func decodeDate(
        _ container: KeyedDecodingContainer<CodingKeys>,
        _ key: CodingKeys
    ) throws -> Date? {
        guard let seconds = try container.decodeIfPresent(Double.self, forKey: key) else { return nil }
        // Dates beyond year 9999 or before 1970 are not a token's.
        guard seconds.isFinite, (0...253_402_300_799).contains(seconds) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: container, debugDescription: "The date is not a finite time after 1970.")
        }
        return storable(Date(timeIntervalSince1970: seconds))
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
        try container.encodeIfPresent(issuedAt?.timeIntervalSince1970, forKey: .issuedAt)
        try container.encodeIfPresent(boundKey, forKey: .boundKey)
        try container.encodeIfPresent(certificateThumbprint, forKey: .certificateThumbprint)
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
        parts.append("expiresAt: \(expiresAt.map(\.safeDescription) ?? "unknown")")
        if let scope { parts.append("scope: \(scope)") }
        if idToken != nil { parts.append("idToken: \(Redaction.describe(idToken))") }
        if let boundKey { parts.append("boundKey: \(boundKey.thumbprint)") }
        if let certificateThumbprint { parts.append("certificateThumbprint: \(certificateThumbprint)") }
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
                "expiresAt": expiresAt.map(\.safeDescription) as Any,
                "scope": scope as Any,
            ],
            displayStyle: .struct
        )
    }
}
