import AuthenticatedRequests
import Foundation

/// What a client tells an authorization server about itself when it registers (RFC 7591 §2), or
/// publishes as a Client ID Metadata Document.
///
/// The defaults describe a public native app that signs in in the browser and keeps a refresh
/// token: `application_type` `native`, the grant types `authorization_code` and
/// `refresh_token`, the response type `code`, and `token_endpoint_auth_method` `none`.
///
/// ```swift
/// let metadata = ClientMetadata(
///     clientName: "Notes for Mac",
///     redirectURIs: [URL(string: "http://127.0.0.1/callback")!]
/// )
/// ```
public struct ClientMetadata: Sendable, Hashable {
    /// RFC 7591 `application_type` (from OpenID Connect Dynamic Client Registration §2).
    public struct ApplicationType: Hashable, Sendable, CustomStringConvertible {
        /// The registered value.
        public let rawValue: String
        /// Creates a type from its registered value.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// An app on the user's device: loopback or custom-scheme redirect URIs.
        public static let native = ApplicationType(rawValue: "native")
        /// A web server: https redirect URIs.
        public static let web = ApplicationType(rawValue: "web")
        /// The registered value.
        public var description: String { rawValue }
    }

    /// `client_name`: shown to the user on the consent page.
    public var clientName: String?
    /// `redirect_uris`: where the authorization server may send the browser back.
    public var redirectURIs: [URL]
    /// `application_type`; always sent.
    public var applicationType: ApplicationType
    /// `grant_types`.
    public var grantTypes: [String]
    /// `response_types`.
    public var responseTypes: [String]
    /// `token_endpoint_auth_method`: `none` for a public client; the registration chooses among
    /// what the server supports when this is `nil`.
    public var tokenEndpointAuthMethod: String?
    /// `scope`: the scopes the client may ask for, space-separated.
    public var scope: String?
    /// `client_uri`: a page about the client.
    public var clientURI: URL?
    /// `logo_uri`.
    public var logoURI: URL?
    /// `jwks_uri`: where the client's public keys are, for `private_key_jwt`.
    public var jwksURI: URL?
    /// `software_id`.
    public var softwareID: String?
    /// `software_version`.
    public var softwareVersion: String?
    /// `software_statement`: a signed JWT vouching for the client (RFC 7591 §2.3), sent as given.
    public var softwareStatement: String?
    /// Further members, sent as given (they never replace the members above).
    public var additionalFields: [String: JSONValue]

    /// Creates client metadata; the defaults describe a public native app.
    public init(
        clientName: String? = nil,
        redirectURIs: [URL],
        applicationType: ApplicationType = .native,
        grantTypes: [String] = ["authorization_code", "refresh_token"],
        responseTypes: [String] = ["code"],
        tokenEndpointAuthMethod: String? = "none",
        scope: String? = nil,
        clientURI: URL? = nil,
        logoURI: URL? = nil,
        jwksURI: URL? = nil,
        softwareID: String? = nil,
        softwareVersion: String? = nil,
        softwareStatement: String? = nil,
        additionalFields: [String: JSONValue] = [:]
    ) {
        self.clientName = clientName
        self.redirectURIs = redirectURIs
        self.applicationType = applicationType
        self.grantTypes = grantTypes
        self.responseTypes = responseTypes
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
        self.scope = scope
        self.clientURI = clientURI
        self.logoURI = logoURI
        self.jwksURI = jwksURI
        self.softwareID = softwareID
        self.softwareVersion = softwareVersion
        self.softwareStatement = softwareStatement
        self.additionalFields = additionalFields
    }

    /// The metadata as the JSON object RFC 7591 §3.1 sends, members in a stable order.
    public var fields: [String: JSONValue] {
        var fields = additionalFields
        func set(_ name: String, _ value: String?) { if let value { fields[name] = .string(value) } }
        func set(_ name: String, _ values: [String]) { fields[name] = .array(values.map(JSONValue.string)) }
        set("client_name", clientName)
        set("redirect_uris", redirectURIs.map(\.absoluteString))
        set("application_type", applicationType.rawValue)
        set("grant_types", grantTypes)
        set("response_types", responseTypes)
        set("token_endpoint_auth_method", tokenEndpointAuthMethod)
        set("scope", scope)
        set("client_uri", clientURI?.absoluteString)
        set("logo_uri", logoURI?.absoluteString)
        set("jwks_uri", jwksURI?.absoluteString)
        set("software_id", softwareID)
        set("software_version", softwareVersion)
        set("software_statement", softwareStatement)
        return fields
    }

    /// Checks what RFC 7591 §2 and RFC 8252 ask of a client's own metadata before anything is
    /// sent: at least one redirect URI when a redirect-based grant is asked for; for a native
    /// app, only loopback `http`, `https` or private-use scheme redirect URIs; for a web app,
    /// only `https` ones (loopback `http` allowed for development); no fragment; and
    /// `refresh_token` only beside a grant that issues one.
    ///
    /// - Throws: ``ClientRegistrationError`` with ``ClientRegistrationError/Code/invalidClientMetadata``.
    public func validate() throws {
        func invalid(_ why: String) -> ClientRegistrationError {
            ClientRegistrationError(.invalidClientMetadata, "The client metadata \(why).")
        }
        let redirects = grantTypes.contains("authorization_code") || responseTypes.contains("code")
        if redirects && redirectURIs.isEmpty { throw invalid("has no redirect URI for the authorization code grant") }
        for uri in redirectURIs {
            guard let scheme = uri.scheme?.lowercased(), uri.fragment == nil else {
                throw invalid("has a redirect URI that is not absolute or has a fragment: \(uri.redactedForDisplay)")
            }
            let loopback = scheme == "http" && uri.isLoopback
            switch applicationType {
            case .web:
                guard scheme == "https" || loopback else {
                    throw invalid(
                        "of a web application has a redirect URI that is not https: \(uri.redactedForDisplay)")
                }
            default:
                guard loopback || scheme == "https" || (scheme != "http" && scheme.contains(".")) else {
                    throw invalid(
                        "of a native application has a redirect URI that is neither loopback http, https nor a "
                            + "private-use scheme such as com.example.app (RFC 8252 §7): \(uri.redactedForDisplay)")
                }
            }
        }
        if grantTypes.contains("refresh_token") && grantTypes.allSatisfy({ $0 == "refresh_token" }) {
            throw invalid("asks for refresh_token without a grant that issues one")
        }
        if tokenEndpointAuthMethod == "private_key_jwt" && jwksURI == nil && additionalFields["jwks"] == nil {
            throw invalid("uses private_key_jwt but names no jwks_uri or jwks")
        }
    }
}
