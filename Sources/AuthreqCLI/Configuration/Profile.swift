import AuthenticatedRequests
import Foundation
import OAuthFlows

/// One server and client that `authreq` signs in to, as kept in the configuration file. It holds
/// no secret: a confidential client's secret comes from a file or an environment variable.
package struct Profile: Equatable, Sendable {
    /// How the profile signs in; `login` records it.
    package enum Grant: String, CaseIterable, Sendable {
        /// The browser, with PKCE and a loopback redirect.
        case authorizationCode = "authorization_code"
        /// The device flow: a code to enter on another device.
        case deviceCode = "device_code"
        /// The client's own credentials; no user.
        case clientCredentials = "client_credentials"
        /// A workload's token from its platform (RFC 7523 §2.1), read from ``Profile/assertionFile``
        /// for every grant; no user, no secret.
        case jwtBearer = "jwt_bearer"
        /// CIBA (OpenID Connect Client-Initiated Backchannel Authentication): the provider asks
        /// the user named by ``Profile/loginHint`` on their own device.
        case ciba
    }

    /// How the client authenticates at the token endpoint.
    package enum ClientAuthMethod: String, CaseIterable, Sendable {
        case none
        case clientSecretBasic = "client_secret_basic"
        case clientSecretPost = "client_secret_post"
        /// The PKI certificate of ``Profile/clientCertificate`` (RFC 8705 §2.1).
        case tlsClientAuth = "tls_client_auth"
        /// The self-signed certificate of ``Profile/clientCertificate`` (RFC 8705 §2.2).
        case selfSignedTLSClientAuth = "self_signed_tls_client_auth"
    }

    /// The issuer: endpoints come from its discovery document.
    package var issuer: URL?
    /// The client identifier; empty for a ``resource`` profile whose client is registered at
    /// sign-in (RFC 7591) and kept with the tokens.
    package var clientID: String
    /// A protected resource to sign in to from its URL alone (RFC 9728 discovery from its 401,
    /// client registration, RFC 8707 `resource`): no issuer or client id needed.
    package var resource: URL?
    /// The `client_name` registered for a ``resource`` profile; `authreq` unless set.
    package var clientName: String?
    /// The scope to ask for.
    package var scope: String?
    /// A file holding the client secret (mode 0600).
    package var clientSecretFile: String?
    /// The environment variable holding the client secret; `AUTHREQ_CLIENT_SECRET` unless set.
    package var clientSecretEnvironment: String?
    /// A workload token file (a Kubernetes projected service-account token, a SPIFFE JWT-SVID):
    /// the profile signs in with the JWT bearer grant, reading the file for every grant.
    package var assertionFile: String?
    /// For a ``resource`` profile: another profile, signed in at the enterprise's OpenID provider
    /// (scope `openid`), whose ID token is exchanged there for an ID-JAG for the resource's
    /// authorization server (Enterprise-Managed Authorization); no browser at that server. The
    /// client at that server is this profile's `client_id` for its `issuer`.
    package var enterpriseProfile: String?
    /// The method; `client_secret_basic` when there is a secret, `none` otherwise.
    package var clientAuthentication: ClientAuthMethod?
    /// Endpoints given by hand (they win over discovered ones).
    package var authorizationEndpoint: URL?
    package var tokenEndpoint: URL?
    package var deviceAuthorizationEndpoint: URL?
    package var revocationEndpoint: URL?
    /// The loopback redirect URI; `http://127.0.0.1/callback` (any port) unless set.
    package var redirectURI: URL?
    /// How `login` signed in last.
    package var grant: Grant?
    /// Whom a CIBA sign-in asks (`login_hint`: an e-mail address, a user name).
    package var loginHint: String?
    /// Whether tokens are sender-constrained with DPoP (RFC 9449): bound to a key kept with the
    /// session, proven on every request. `false` unless set.
    package var dpop: Bool?
    /// Whether the browser sign-in pushes its request first (PAR, RFC 9126); a server that
    /// requires it gets it anyway. `false` unless set.
    package var pushesAuthorizationRequests: Bool?
    /// Whether `client_id` goes in the token request's body with HTTP Basic too, for servers that
    /// read it only there (the MCP Python SDK's). `false` unless set.
    package var clientIDInBody: Bool?
    /// A PEM file with the client's certificate (and its chain) for mutual TLS (RFC 8705): every
    /// request presents it, read again when the file changes; tokens come back bound to it.
    package var clientCertificate: String?
    /// The PEM file of ``clientCertificate``'s private key (mode 0600).
    package var clientKey: String?
    /// A PEM file of the certificate authorities trusted for the servers' certificates, in place of
    /// the system's (a private PKI).
    package var caFile: String?

    /// The server switches this profile asks for.
    package var compatibility: ServerCompatibility {
        clientIDInBody == true ? [.clientIDInBodyWithBasicAuthentication] : []
    }

    package init(clientID: String, issuer: URL? = nil) {
        self.clientID = clientID
        self.issuer = issuer
    }

    /// The environment variable of the client secret.
    package var secretVariable: String { clientSecretEnvironment ?? "AUTHREQ_CLIENT_SECRET" }

    /// The keys of a profile in the file, in the order they are written.
    static let keys = [
        "resource", "client_name", "issuer", "client_id", "scope", "client_secret_file", "client_secret_env",
        "assertion_file", "enterprise_profile", "client_auth",
        "authorization_endpoint", "token_endpoint", "device_authorization_endpoint", "revocation_endpoint",
        "redirect_uri", "grant", "login_hint", "dpop", "par", "client_id_in_body", "client_certificate", "client_key",
        "ca_file",
    ]

    /// Reads a profile from its JSON object; every mistake is named.
    init(name: String, fields: [String: JSONValue]) throws(CLIError) {
        func fail(_ why: String) -> CLIError { .usage("Profile '\(name)': \(why)") }
        for key in fields.keys.sorted() where !Self.keys.contains(key) {
            throw fail("unknown setting '\(key)' (known: \(Self.keys.joined(separator: ", "))).")
        }
        func string(_ key: String) throws(CLIError) -> String? {
            guard let value = fields[key] else { return nil }
            if case .null = value { return nil }
            guard let string = value.stringValue else { throw fail("'\(key)' must be a string.") }
            return string
        }
        func url(_ key: String) throws(CLIError) -> URL? {
            guard let text = try string(key) else { return nil }
            guard let url = URL(string: text), url.scheme != nil, url.host != nil else {
                throw fail("'\(key)' is not an absolute URL.")
            }
            return url
        }
        let resource = try url("resource")
        let clientID = try string("client_id") ?? ""
        guard !clientID.isEmpty || resource != nil else {
            throw fail("'client_id' is missing (or give a 'resource' to register a client at sign-in).")
        }
        self.init(clientID: clientID, issuer: try url("issuer"))
        self.resource = resource
        clientName = try string("client_name")
        scope = try string("scope")
        clientSecretFile = try string("client_secret_file")
        clientSecretEnvironment = try string("client_secret_env")
        assertionFile = try string("assertion_file")
        enterpriseProfile = try string("enterprise_profile")
        if let method = try string("client_auth") {
            guard let known = ClientAuthMethod(rawValue: method) else {
                throw fail(
                    "'client_auth' must be one of \(ClientAuthMethod.allCases.map(\.rawValue).joined(separator: ", "))."
                )
            }
            clientAuthentication = known
        }
        authorizationEndpoint = try url("authorization_endpoint")
        tokenEndpoint = try url("token_endpoint")
        deviceAuthorizationEndpoint = try url("device_authorization_endpoint")
        revocationEndpoint = try url("revocation_endpoint")
        redirectURI = try url("redirect_uri")
        loginHint = try string("login_hint")
        clientCertificate = try string("client_certificate")
        clientKey = try string("client_key")
        caFile = try string("ca_file")
        func bool(_ key: String) throws(CLIError) -> Bool? {
            switch fields[key] {
            case nil, .null?: return nil
            case .bool(let value)?: return value
            default: throw fail("'\(key)' must be true or false.")
            }
        }
        dpop = try bool("dpop")
        pushesAuthorizationRequests = try bool("par")
        clientIDInBody = try bool("client_id_in_body")
        if let grant = try string("grant") {
            guard let known = Grant(rawValue: grant) else {
                throw fail("'grant' must be one of \(Grant.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            self.grant = known
        }
    }

    /// The profile as a JSON object.
    var fields: [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        func put(_ key: String, _ value: String?) { if let value { fields[key] = .string(value) } }
        put("client_id", clientID.isEmpty ? nil : clientID)
        put("resource", resource?.absoluteString)
        put("client_name", clientName)
        put("issuer", issuer?.absoluteString)
        put("scope", scope)
        put("client_secret_file", clientSecretFile)
        put("client_secret_env", clientSecretEnvironment)
        put("assertion_file", assertionFile)
        put("enterprise_profile", enterpriseProfile)
        put("client_auth", clientAuthentication?.rawValue)
        put("authorization_endpoint", authorizationEndpoint?.absoluteString)
        put("token_endpoint", tokenEndpoint?.absoluteString)
        put("device_authorization_endpoint", deviceAuthorizationEndpoint?.absoluteString)
        put("revocation_endpoint", revocationEndpoint?.absoluteString)
        put("redirect_uri", redirectURI?.absoluteString)
        put("grant", grant?.rawValue)
        put("login_hint", loginHint)
        put("client_certificate", clientCertificate)
        put("client_key", clientKey)
        put("ca_file", caFile)
        if let dpop { fields["dpop"] = .bool(dpop) }
        if let pushesAuthorizationRequests { fields["par"] = .bool(pushesAuthorizationRequests) }
        if let clientIDInBody { fields["client_id_in_body"] = .bool(clientIDInBody) }
        return fields
    }

    /// Checks what reading alone cannot: where tokens and secrets may go.
    ///
    /// - Throws: ``CLIError`` (usage) for an issuer or endpoint that is neither `https` nor `http`
    ///   to a loopback address, a redirect URI that is not `http` to a loopback address, or
    ///   neither an issuer nor a token endpoint.
    package func validate(name: String) throws(CLIError) {
        guard issuer != nil || tokenEndpoint != nil || resource != nil else {
            throw .usage("Profile '\(name)' needs an issuer (--issuer) or a token endpoint (--token-endpoint).")
        }
        let urls: [(String, URL?)] = [
            ("resource", resource), ("issuer", issuer), ("authorization_endpoint", authorizationEndpoint),
            ("token_endpoint", tokenEndpoint),
            ("device_authorization_endpoint", deviceAuthorizationEndpoint),
            ("revocation_endpoint", revocationEndpoint),
        ]
        for case (let key, let url?) in urls where !url.isSafeForSecrets {
            throw .usage(
                "Profile '\(name)': \(key) \(url.redactedForDisplay) is plain http to a host that is not loopback; "
                    + "tokens and secrets go only over https (or http to 127.0.0.1, ::1 or localhost).")
        }
        if let enterpriseProfile {
            guard resource != nil, !clientID.isEmpty, issuer != nil else {
                throw .usage(
                    "Profile '\(name)': enterprise_profile needs a resource (--resource), and the client registered "
                        + "at its authorization server (--issuer and --client-id).")
            }
            guard Self.isValidName(enterpriseProfile), enterpriseProfile != name else {
                throw .usage("Profile '\(name)': enterprise_profile must name another profile.")
            }
        }
        guard (clientCertificate == nil) == (clientKey == nil) else {
            throw .usage(
                "Profile '\(name)': client_certificate (--client-certificate) and client_key (--client-key) go together."
            )
        }
        if [.tlsClientAuth, .selfSignedTLSClientAuth].contains(clientAuthentication), clientCertificate == nil {
            throw .usage(
                "Profile '\(name)': client_auth \(clientAuthentication?.rawValue ?? "") needs a client certificate "
                    + "(--client-certificate and --client-key).")
        }
        if let redirectURI, !(redirectURI.scheme?.lowercased() == "http" && redirectURI.isLoopback) {
            throw .usage(
                "Profile '\(name)': redirect_uri must be http to a loopback address, such as "
                    + "http://127.0.0.1/callback (the tool receives the redirect itself).")
        }
    }

    /// Whether `name` can name a profile: letters, digits, `.`, `_` and `-`, at most 64, not
    /// starting with `.` (it names files).
    package static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy {
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
            }
    }
}
