import AuthenticatedRequests
import Foundation

/// An authorization server's introspection endpoint (RFC 7662) and the client that uses it: a
/// resource server asks whether a token is active and what it allows.
///
/// ```swift
/// let introspection = try metadata.introspectionEndpoint(client: .clientSecretBasic(id: "api", secret: secret))
/// let info = try await introspection.introspect(token, context: context)
/// guard info.isActive, info.scopes.contains("read") else { throw Unauthorized() }
/// ```
public struct IntrospectionEndpoint: Sendable {
    /// The endpoint's URL.
    public let url: URL
    /// How the client authenticates (RFC 7662 §2.1 requires it).
    public let client: ClientAuthentication

    /// Creates an introspection endpoint client.
    public init(url: URL, client: ClientAuthentication) {
        self.url = url
        self.client = client
    }

    /// Asks about `token` (RFC 7662 §2.1).
    /// - Throws: `OAuthError` (e.g. `invalid_client`),
    ///   ``TokenEndpointError`` for a reply that is not an introspection response, or a transport error.
    public func introspect(
        _ token: String,
        hint: TokenTypeHint? = nil,
        context: AuthenticationContext
    ) async throws -> TokenIntrospection {
        var parameters = [("token", token)]
        if let hint { parameters.append(("token_type_hint", hint.rawValue)) }
        let reply = try await FormPost.send(parameters, to: url, client: client, context: context)
        return try TokenIntrospection(reply: reply, now: context.clock.now)
    }
}

/// What an introspection endpoint said about a token (RFC 7662 §2.2).
///
/// Only ``isActive`` is required; every other field is `nil` when the server left it out (an
/// inactive token usually has none). Dates are checked like every number from a server: a value
/// that is not a finite time between 1970 and 9999 is a ``TokenEndpointError`` with code
/// `invalidField`.
public struct TokenIntrospection: Sendable, Hashable {
    /// `active`: whether the token is valid now.
    public let isActive: Bool
    /// `scope`: space-delimited.
    public let scope: String?
    /// `client_id`: the client the token was issued to.
    public let clientID: String?
    /// `username`: a human-readable name of the resource owner.
    public let username: String?
    /// `token_type`.
    public let tokenType: String?
    /// `exp`: when the token expires.
    public let expiresAt: Date?
    /// `iat`: when it was issued.
    public let issuedAt: Date?
    /// `nbf`: not to be used before.
    public let notBefore: Date?
    /// `sub`: the subject.
    public let subject: String?
    /// `aud`: the audiences (a single string becomes one element).
    public let audience: [String]
    /// `iss`: the issuer.
    public let issuer: String?
    /// `jti`: the token's identifier.
    public let tokenID: String?
    /// Every other field, as sent (`cnf` included).
    public let additionalFields: [String: JSONValue]

    /// The scopes, split on spaces.
    public var scopes: [String] { scope?.split(separator: " ").map(String.init) ?? [] }

    /// `cnf.x5t#S256` (RFC 8705 §3.2): the client certificate the token is bound to, if any.
    /// Compare it with `OAuthToken.certificateThumbprint` or the transport's
    /// `clientCertificateThumbprint()`: a token bound to another certificate is not to be sent.
    public var certificateThumbprint: String? {
        additionalFields["cnf"]?.objectValue?["x5t#S256"]?.stringValue
    }

    /// Parses an introspection response.
    package init(reply: ServerReply, now: Date) throws {
        var fields = try FormPost.jsonObject(from: reply, now: now)
        func invalid(_ name: String, _ problem: String) -> TokenEndpointError {
            TokenEndpointError(
                .invalidField, "The introspection response's \(name) \(problem).", reply: reply, field: name)
        }
        func string(_ name: String) throws -> String? {
            switch fields.removeValue(forKey: name) {
            case nil, .null?: return nil
            case .string(let value)?: return value
            default: throw invalid(name, "is not a string")
            }
        }
        func date(_ name: String) throws -> Date? {
            switch fields.removeValue(forKey: name) {
            case nil, .null?: return nil
            case .number(let seconds)? where seconds.isFinite && (0...253_402_300_799).contains(seconds):
                return Date(timeIntervalSince1970: seconds)
            default: throw invalid(name, "is not a time in seconds since 1970")
            }
        }
        guard case .bool(let active)? = fields.removeValue(forKey: "active") else {
            throw TokenEndpointError(
                .missingField, "The introspection response has no boolean active.", reply: reply, field: "active")
        }
        isActive = active
        scope = try string("scope")
        clientID = try string("client_id")
        username = try string("username")
        tokenType = try string("token_type")
        expiresAt = try date("exp")
        issuedAt = try date("iat")
        notBefore = try date("nbf")
        subject = try string("sub")
        switch fields.removeValue(forKey: "aud") {
        case nil, .null?: audience = []
        case .string(let value)?: audience = [value]
        case .array(let values)? where values.allSatisfy({ $0.stringValue != nil }):
            audience = values.compactMap(\.stringValue)
        default: throw invalid("aud", "is neither a string nor an array of strings")
        }
        issuer = try string("iss")
        tokenID = try string("jti")
        additionalFields = fields
    }
}

extension AuthorizationServerMetadata {
    /// The introspection endpoint for `client`.
    public func introspectionEndpoint(client: ClientAuthentication) throws -> IntrospectionEndpoint {
        guard let introspectionEndpoint = resolved(for: client).introspectionEndpoint else {
            throw TokenEndpointError(.missingEndpoint, "The metadata has no introspection_endpoint.")
        }
        return IntrospectionEndpoint(url: introspectionEndpoint, client: client.at(issuer: issuer))
    }
}
