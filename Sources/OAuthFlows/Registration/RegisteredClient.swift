import AuthenticatedRequests
import Foundation

/// A client registered at an authorization server: the RFC 7591 §3.2.1 reply, checked, with the
/// issuer it belongs to.
///
/// It is stored (`TokenStore`) under the issuer, so every launch and every process that meets
/// that issuer reuses it; its `client_secret` and `registration_access_token` are secrets that no
/// description, mirror or log shows.
public struct RegisteredClient: Sendable, Codable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The issuer of the authorization server the client is registered at.
    public let issuer: String
    /// `client_id`.
    public let clientID: String
    /// `client_secret`, when the server issued one.
    public let clientSecret: String?
    /// `token_endpoint_auth_method` the client uses: the server's answer, else what was asked,
    /// else RFC 7591's default `client_secret_basic`.
    public let tokenEndpointAuthMethod: String
    /// `client_id_issued_at`.
    public let clientIDIssuedAt: Date?
    /// `client_secret_expires_at`; `nil` when the secret does not expire (`0`).
    public let clientSecretExpiresAt: Date?
    /// RFC 7592 `registration_access_token`, for reading, updating and deleting the registration.
    public let registrationAccessToken: String?
    /// RFC 7592 `registration_client_uri`.
    public let registrationClientURI: URL?
    /// `redirect_uris` as registered.
    public let redirectURIs: [URL]
    /// Every member of the reply.
    public let fields: [String: JSONValue]

    /// Reads a registration reply.
    ///
    /// - Parameters:
    ///   - fields: the reply's JSON object.
    ///   - issuer: the issuer of the server that answered.
    ///   - requested: what was sent; the reply must keep its redirect URIs, and a method is
    ///     taken from it when the reply names none.
    /// - Throws: ``ClientRegistrationError`` with ``ClientRegistrationError/Code/invalidResponse``.
    public init(fields: [String: JSONValue], issuer: String, requested: ClientMetadata? = nil) throws {
        // The reply's own secrets, left out of every message about it (a hostile reply may quote
        // them where a message names a member's value).
        let replySecrets = ["client_secret", "registration_access_token"].compactMap { fields[$0]?.stringValue }
        func redacted(_ text: String) -> String { Redaction.redact(text, removing: replySecrets) }
        func invalid(_ why: String) -> ClientRegistrationError {
            ClientRegistrationError(.invalidResponse, redacted("The registration reply \(why)."))
        }
        func string(_ name: String) throws -> String? {
            switch fields[name] {
            case nil, .null?: return nil
            case .string(let value)?: return value
            default: throw invalid("has a \(name) that is not a string")
            }
        }
        func date(_ name: String) throws -> Date? {
            switch fields[name] {
            case nil, .null?: return nil
            case .number(let value)? where value.isFinite && value >= 0 && value < 1e11:
                return value == 0 ? nil : Date(timeIntervalSince1970: value.rounded(.down))
            default: throw invalid("has a \(name) that is not a time in seconds")
            }
        }
        guard let clientID = try string("client_id"), !clientID.isEmpty, clientID.utf8.count <= 2048 else {
            throw invalid("has no client_id")
        }
        let secret = try string("client_secret")
        let method =
            try string("token_endpoint_auth_method") ?? requested?.tokenEndpointAuthMethod
            ?? "client_secret_basic"
        switch method {
        case "none":
            break
        case "client_secret_basic", "client_secret_post":
            guard let secret, !secret.isEmpty else { throw invalid("names \(method) but issued no client_secret") }
        default:
            throw ClientRegistrationError(
                .unsupportedAuthenticationMethod,
                redacted("The server registered the client for \(method), which this client does not use."))
        }
        // A secret equal to the client's public identifier, or inside it, the issuer or the method
        // (which descriptions show), is no secret: every message naming the client would show it.
        // Secrets under 8 bytes are not looked for inside: they would match by chance.
        let publicText = clientID + " " + issuer + " " + method
        guard
            !replySecrets.contains(where: { $0 == clientID || ($0.utf8.count >= 8 && publicText.contains($0)) })
        else {
            throw invalid("has a client_secret or registration_access_token that its client_id, issuer or method shows")
        }
        // RFC 7591 §3.2.1 makes `client_secret_expires_at` required with a secret, but servers omit
        // it (the MCP conformance suite's authorization server among them); an absent one reads as
        // `0`, a secret that does not expire, which only means the registration is kept longer.
        var redirects: [URL] = []
        switch fields["redirect_uris"] {
        case nil, .null?:
            redirects = requested?.redirectURIs ?? []
        case .array(let values)?:
            for value in values {
                guard let text = value.stringValue, let url = URL(string: text) else {
                    throw invalid("has a redirect_uris entry that is not a URL")
                }
                redirects.append(url)
            }
        default:
            throw invalid("has redirect_uris that is not an array")
        }
        if let requested {
            let asked = Set(requested.redirectURIs.map(\.absoluteString))
            guard Set(redirects.map(\.absoluteString)) == asked else {
                throw invalid("registered other redirect URIs than the client asked for")
            }
        }
        let managementURI = try string("registration_client_uri")
        // What was taken from the request is kept with the reply, so a stored copy reads the same.
        var fields = fields
        fields["token_endpoint_auth_method"] = .string(method)
        fields["redirect_uris"] = .array(redirects.map { .string($0.absoluteString) })
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecret = method == "none" ? nil : secret
        self.tokenEndpointAuthMethod = method
        self.clientIDIssuedAt = try date("client_id_issued_at")
        self.clientSecretExpiresAt = try date("client_secret_expires_at")
        self.registrationAccessToken = try string("registration_access_token")
        self.registrationClientURI = try managementURI.map { text in
            guard let url = URL(string: text), url.isSafeForSecrets else {
                throw invalid("has a registration_client_uri that is not https (or http to a loopback address)")
            }
            return url
        }
        self.redirectURIs = redirects
        self.fields = fields
    }

    /// How the client authenticates at the token endpoint; it holds the registration access
    /// token too, so no error built from a token endpoint's reply shows it.
    public var clientAuthentication: ClientAuthentication {
        let client: ClientAuthentication =
            switch (tokenEndpointAuthMethod, clientSecret) {
            case ("client_secret_post", let secret?): .clientSecretPost(id: clientID, secret: secret)
            case ("client_secret_basic", let secret?): .clientSecretBasic(id: clientID, secret: secret)
            default: .none(id: clientID)
            }
        return client.holding([registrationAccessToken].compactMap { $0 })
    }

    /// Whether the secret has expired at `now` (the client must register again).
    public func hasExpired(at now: Date) -> Bool {
        clientSecretExpiresAt.map { now >= $0 } ?? false
    }

    /// The secrets the registration holds, for redaction.
    public var secretValues: [String] { [clientSecret, registrationAccessToken].compactMap { $0 } }

    // MARK: Storage

    private enum CodingKeys: String, CodingKey {
        case issuer, fields
    }

    /// Reads a stored registration, checking it as a reply.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            fields: try container.decode([String: JSONValue].self, forKey: .fields),
            issuer: try container.decode(String.self, forKey: .issuer))
    }

    /// Stores the issuer and the reply.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(issuer, forKey: .issuer)
        try container.encode(fields, forKey: .fields)
    }

    // MARK: Descriptions

    /// `RegisteredClient(<client id> at <issuer>, <method>)`: no secret.
    public var description: String {
        "RegisteredClient(\(clientID) at \(issuer), \(tokenEndpointAuthMethod)"
            + (clientSecret == nil ? "" : ", secret: <redacted>")
            + (registrationAccessToken == nil ? "" : ", registration access token: <redacted>") + ")"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror without the secrets.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
