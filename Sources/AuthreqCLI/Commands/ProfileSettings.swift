import ArgumentParser
import Foundation

/// The settings of a profile on the command line (`profile add`, `login`).
struct ProfileSettings: ParsableArguments {
    @Option(help: "A protected resource's URL: its server and client are found (and registered) at sign-in.")
    var resource: String?
    @Option(help: "The client_name to register for --resource (default authreq).")
    var clientName: String?
    @Option(help: "The issuer; endpoints come from its discovery document.")
    var issuer: String?
    @Option(help: "The client identifier.")
    var clientID: String?
    @Option(help: "The scope to ask for (space-separated).")
    var scope: String?
    @Option(help: "A file holding the client secret (mode 0600); else $AUTHREQ_CLIENT_SECRET.")
    var clientSecretFile: String?
    @Option(help: "The environment variable holding the client secret.")
    var clientSecretEnv: String?
    @Option(help: "A workload token file (Kubernetes, SPIFFE): sign in with the JWT bearer grant, re-reading it.")
    var assertionFile: String?
    @Option(
        help: ArgumentHelp(
            "With --resource: the profile signed in at the enterprise's OpenID provider; its ID token becomes an "
                + "ID-JAG for the resource's server (no browser there).",
            valueName: "profile"))
    var enterpriseProfile: String?
    @Option(help: "none, client_secret_basic, client_secret_post, tls_client_auth or self_signed_tls_client_auth.")
    var clientAuth: String?
    @Option(
        help: ArgumentHelp(
            "A PEM file with the client certificate for mutual TLS (RFC 8705), re-read when it changes.",
            valueName: "file"))
    var clientCertificate: String?
    @Option(help: ArgumentHelp("The PEM file of the client certificate's private key.", valueName: "file"))
    var clientKey: String?
    @Option(help: ArgumentHelp("A PEM file of the CAs trusted for the servers' certificates.", valueName: "file"))
    var caFile: String?
    @Option(help: "The authorization endpoint, when there is no discovery.")
    var authorizationEndpoint: String?
    @Option(help: "The token endpoint, when there is no discovery.")
    var tokenEndpoint: String?
    @Option(help: "The device authorization endpoint, when there is no discovery.")
    var deviceAuthorizationEndpoint: String?
    @Option(help: "The revocation endpoint, when there is no discovery.")
    var revocationEndpoint: String?
    @Option(help: "The loopback redirect URI registered for the client (default http://127.0.0.1/callback).")
    var redirectURI: String?
    @Option(help: "true: bind tokens to a key with DPoP (RFC 9449) and prove it on every request.")
    var dpop: Bool?
    @Option(help: "true: push the browser sign-in's request first (PAR, RFC 9126).")
    var par: Bool?
    @Option(
        help: "true: send client_id in the token request's body with HTTP Basic too (MCP Python SDK servers need it).")
    var clientIDInBody: Bool?

    /// Whether any setting was given.
    var isEmpty: Bool {
        [
            resource, clientName, issuer, clientID, scope, clientSecretFile, clientSecretEnv, assertionFile, clientAuth,
            enterpriseProfile, authorizationEndpoint, clientCertificate, clientKey, caFile,
            tokenEndpoint, deviceAuthorizationEndpoint, revocationEndpoint, redirectURI,
        ].allSatisfy { $0 == nil } && dpop == nil && par == nil && clientIDInBody == nil
    }

    /// `existing` with these settings applied; a new profile needs `--client-id`.
    func applied(to existing: Profile?, name: String) throws -> Profile {
        guard
            var profile = existing ?? clientID.map({ Profile(clientID: $0) })
                ?? resource.map({ _ in Profile(clientID: "") })
        else {
            throw CLIError.usage(
                "A new profile '\(name)' needs --resource, or --client-id (and --issuer or --token-endpoint).")
        }
        func url(_ text: String?, _ option: String) throws -> URL? {
            guard let text else { return nil }
            guard let url = URL(string: text), url.scheme != nil, url.host != nil else {
                throw CLIError.usage("--\(option) must be an absolute URL.")
            }
            return url
        }
        if let clientID { profile.clientID = clientID }
        if let value = try url(resource, "resource") { profile.resource = value }
        if let clientName { profile.clientName = clientName }
        if let issuer { profile.issuer = try url(issuer, "issuer") }
        if let scope { profile.scope = scope }
        if let clientSecretFile {
            profile.clientSecretFile = URL(fileURLWithPath: (clientSecretFile as NSString).expandingTildeInPath).path
        }
        if let clientSecretEnv { profile.clientSecretEnvironment = clientSecretEnv }
        if let assertionFile {
            profile.assertionFile = URL(fileURLWithPath: (assertionFile as NSString).expandingTildeInPath).path
        }
        if let enterpriseProfile { profile.enterpriseProfile = enterpriseProfile }
        func path(_ text: String?) -> String? {
            text.map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath).path }
        }
        if let clientCertificate = path(clientCertificate) { profile.clientCertificate = clientCertificate }
        if let clientKey = path(clientKey) { profile.clientKey = clientKey }
        if let caFile = path(caFile) { profile.caFile = caFile }
        if let clientAuth {
            guard let method = Profile.ClientAuthMethod(rawValue: clientAuth) else {
                throw CLIError.usage(
                    "--client-auth must be one of "
                        + Profile.ClientAuthMethod.allCases.map(\.rawValue).joined(separator: ", ") + ".")
            }
            profile.clientAuthentication = method
        }
        if let value = try url(authorizationEndpoint, "authorization-endpoint") {
            profile.authorizationEndpoint = value
        }
        if let value = try url(tokenEndpoint, "token-endpoint") { profile.tokenEndpoint = value }
        if let value = try url(deviceAuthorizationEndpoint, "device-authorization-endpoint") {
            profile.deviceAuthorizationEndpoint = value
        }
        if let value = try url(revocationEndpoint, "revocation-endpoint") { profile.revocationEndpoint = value }
        if let value = try url(redirectURI, "redirect-uri") { profile.redirectURI = value }
        if let dpop { profile.dpop = dpop }
        if let par { profile.pushesAuthorizationRequests = par }
        if let clientIDInBody { profile.clientIDInBody = clientIDInBody }
        try profile.validate(name: name)
        return profile
    }
}
