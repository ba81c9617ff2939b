import AuthenticatedRequests
import Foundation
import OAuthFlows

/// The endpoints a profile uses, from discovery, the profile, or both; cached per profile so
/// that `authreq token` makes no discovery request.
package struct ServerEndpoints: Equatable, Sendable {
    /// The issuer, when known.
    package var issuer: String?
    package var authorization: URL?
    package var token: URL
    package var deviceAuthorization: URL?
    package var revocation: URL?
    /// Whether the authorization response must carry `iss` (RFC 9207).
    package var requiresIssuerParameter: Bool
    /// The pushed authorization request endpoint (RFC 9126), when the server has one.
    package var pushedAuthorization: URL?
    /// Whether the server requires pushed authorization requests.
    package var requiresPushedAuthorization = false

    package init(
        issuer: String?, authorization: URL?, token: URL, deviceAuthorization: URL?, revocation: URL?,
        requiresIssuerParameter: Bool
    ) {
        self.issuer = issuer
        self.authorization = authorization
        self.token = token
        self.deviceAuthorization = deviceAuthorization
        self.revocation = revocation
        self.requiresIssuerParameter = requiresIssuerParameter
    }

    /// The endpoints of discovered `metadata`, with those the profile names winning.
    init(metadata: AuthorizationServerMetadata, profile: Profile) throws(CLIError) {
        // A profile with a client certificate uses the mutual-TLS aliases (RFC 8705 §5).
        let metadata = metadata.resolved(usingMutualTLS: profile.clientCertificate != nil)
        guard let token = profile.tokenEndpoint ?? metadata.tokenEndpoint else {
            throw .usage("The server's metadata names no token_endpoint; set token_endpoint in the profile.")
        }
        self.init(
            issuer: metadata.issuer,
            authorization: profile.authorizationEndpoint ?? metadata.authorizationEndpoint,
            token: token,
            deviceAuthorization: profile.deviceAuthorizationEndpoint ?? metadata.deviceAuthorizationEndpoint,
            revocation: profile.revocationEndpoint ?? metadata.revocationEndpoint,
            requiresIssuerParameter: metadata.authorizationResponseIssParameterSupported
        )
        pushedAuthorization = metadata.pushedAuthorizationRequestEndpoint
        requiresPushedAuthorization = metadata.requirePushedAuthorizationRequests
    }

    /// The endpoints a profile names by hand (no issuer, so no discovery).
    init?(profile: Profile) {
        guard let token = profile.tokenEndpoint else { return nil }
        self.init(
            issuer: profile.issuer?.absoluteString,
            authorization: profile.authorizationEndpoint,
            token: token,
            deviceAuthorization: profile.deviceAuthorizationEndpoint,
            revocation: profile.revocationEndpoint,
            requiresIssuerParameter: false
        )
    }

    /// Refuses discovered endpoints that would carry secrets over plain `http` to another host.
    func validate() throws(CLIError) {
        for case let url? in [authorization, token, deviceAuthorization, revocation, pushedAuthorization]
        where !url.isSafeForSecrets {
            throw .usage(
                "The server names \(url.redactedForDisplay), plain http to a host that is not loopback; "
                    + "tokens and secrets go only over https.")
        }
    }

    /// Reads a cache file's bytes; `nil` for anything that is not a complete, safe entry (the
    /// cache is then ignored and discovery runs again).
    package init?(cached data: Data) {
        guard let object = try? JSONValue(parsing: data).objectValue else { return nil }
        func url(_ key: String) -> URL? {
            object[key]?.stringValue.flatMap(URL.init(string:)).flatMap { $0.isSafeForSecrets ? $0 : nil }
        }
        guard let token = url("token_endpoint") else { return nil }
        let requiresIssuer: Bool
        switch object["requires_iss"] {
        case .bool(let value)?: requiresIssuer = value
        default: return nil
        }
        self.init(
            issuer: object["issuer"]?.stringValue,
            authorization: url("authorization_endpoint"),
            token: token,
            deviceAuthorization: url("device_authorization_endpoint"),
            revocation: url("revocation_endpoint"),
            requiresIssuerParameter: requiresIssuer
        )
        pushedAuthorization = url("pushed_authorization_request_endpoint")
        if case .bool(let value)? = object["requires_par"] { requiresPushedAuthorization = value }
    }

    /// The cache file's bytes.
    package func cached() throws -> Data {
        var object: [String: JSONValue] = [
            "token_endpoint": .string(token.absoluteString), "requires_iss": .bool(requiresIssuerParameter),
        ]
        if let issuer { object["issuer"] = .string(issuer) }
        if let authorization { object["authorization_endpoint"] = .string(authorization.absoluteString) }
        if let deviceAuthorization {
            object["device_authorization_endpoint"] = .string(deviceAuthorization.absoluteString)
        }
        if let revocation { object["revocation_endpoint"] = .string(revocation.absoluteString) }
        if let pushedAuthorization {
            object["pushed_authorization_request_endpoint"] = .string(pushedAuthorization.absoluteString)
        }
        if requiresPushedAuthorization { object["requires_par"] = .bool(true) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(JSONValue.object(object))
    }
}
