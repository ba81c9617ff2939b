import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An authorization server's metadata (RFC 8414 §2; OpenID Connect Discovery 1.0 §3).
///
/// Fetch it with ``discover(issuer:document:context:)``, then build flows from it, e.g.
/// `try metadata.clientCredentialsFlow(client: client)`.
///
/// It is `Codable` (as the JSON document it came from), so an app can keep it with its session:
/// ``discover(issuer:document:cachingIn:maximumAge:context:)`` does, and an app launched without
/// a network still restores its session.
public struct AuthorizationServerMetadata: Sendable, Codable {
    /// Which well-known document to read.
    public struct Document: Hashable, Sendable {
        let suffix: String
        let insertsBeforePath: Bool
        /// `/.well-known/oauth-authorization-server` (RFC 8414 §3), inserted before the issuer's path.
        public static let oauthAuthorizationServer = Document(
            suffix: ".well-known/oauth-authorization-server",
            insertsBeforePath: true
        )
        /// `/.well-known/openid-configuration` (OpenID Discovery §4), appended to the issuer.
        public static let openIDConfiguration = Document(
            suffix: ".well-known/openid-configuration", insertsBeforePath: false)
    }

    /// `issuer`.
    public let issuer: String
    /// `authorization_endpoint`.
    public let authorizationEndpoint: URL?
    /// `token_endpoint`.
    public let tokenEndpoint: URL?
    /// `device_authorization_endpoint` (RFC 8628 §4).
    public let deviceAuthorizationEndpoint: URL?
    /// `revocation_endpoint` (RFC 7009).
    public let revocationEndpoint: URL?
    /// `introspection_endpoint` (RFC 7662).
    public let introspectionEndpoint: URL?
    /// `jwks_uri`.
    public let jwksURI: URL?
    /// `scopes_supported`.
    public let scopesSupported: [String]
    /// `response_types_supported`.
    public let responseTypesSupported: [String]
    /// `grant_types_supported`; RFC 8414 says to assume `authorization_code` and `implicit` if absent.
    public let grantTypesSupported: [String]
    /// `token_endpoint_auth_methods_supported`; `client_secret_basic` if absent.
    public let tokenEndpointAuthMethodsSupported: [String]
    /// `code_challenge_methods_supported` (RFC 7636).
    public let codeChallengeMethodsSupported: [String]
    /// `authorization_response_iss_parameter_supported` (RFC 9207).
    public let authorizationResponseIssParameterSupported: Bool
    /// `pushed_authorization_request_endpoint` (RFC 9126 §5).
    public let pushedAuthorizationRequestEndpoint: URL?
    /// `require_pushed_authorization_requests` (RFC 9126 §5): authorization requests must be
    /// pushed; `false` when absent.
    public let requirePushedAuthorizationRequests: Bool
    /// `dpop_signing_alg_values_supported` (RFC 9449 §5.1): the proof algorithms the server
    /// accepts; empty when absent.
    public let dpopSigningAlgValuesSupported: [String]
    /// `backchannel_authentication_endpoint` (OpenID Connect CIBA Core §4).
    public let backchannelAuthenticationEndpoint: URL?
    /// `backchannel_token_delivery_modes_supported` (CIBA Core §4): `poll`, `ping`, `push`; empty
    /// when absent.
    public let backchannelTokenDeliveryModesSupported: [String]
    /// `backchannel_user_code_parameter_supported` (CIBA Core §4); `false` when absent.
    public let backchannelUserCodeParameterSupported: Bool
    /// `backchannel_authentication_request_signing_alg_values_supported` (CIBA Core §4): the
    /// algorithms of signed authentication requests the server accepts; empty when absent.
    public let backchannelAuthenticationRequestSigningAlgValuesSupported: [String]
    /// Every field, as sent.
    public let fields: [String: JSONValue]

    /// Reads metadata from a JSON object.
    public init(fields: [String: JSONValue]) throws {
        guard let issuer = fields["issuer"]?.stringValue else {
            throw TokenEndpointError(.missingField, "The metadata has no issuer.")
        }
        func url(_ name: String) -> URL? { fields[name]?.stringValue.flatMap(URL.init(string:)) }
        func strings(_ name: String) -> [String]? {
            guard case .array(let values)? = fields[name] else { return nil }
            return values.compactMap(\.stringValue)
        }
        self.issuer = issuer
        self.authorizationEndpoint = url("authorization_endpoint")
        self.tokenEndpoint = url("token_endpoint")
        self.deviceAuthorizationEndpoint = url("device_authorization_endpoint")
        self.revocationEndpoint = url("revocation_endpoint")
        self.introspectionEndpoint = url("introspection_endpoint")
        self.jwksURI = url("jwks_uri")
        self.scopesSupported = strings("scopes_supported") ?? []
        self.responseTypesSupported = strings("response_types_supported") ?? []
        self.grantTypesSupported = strings("grant_types_supported") ?? ["authorization_code", "implicit"]
        self.tokenEndpointAuthMethodsSupported =
            strings("token_endpoint_auth_methods_supported") ?? ["client_secret_basic"]
        self.codeChallengeMethodsSupported = strings("code_challenge_methods_supported") ?? []
        func bool(_ name: String) -> Bool {
            if case .bool(let value)? = fields[name] { return value }
            return false
        }
        self.authorizationResponseIssParameterSupported = bool("authorization_response_iss_parameter_supported")
        self.pushedAuthorizationRequestEndpoint = url("pushed_authorization_request_endpoint")
        self.requirePushedAuthorizationRequests = bool("require_pushed_authorization_requests")
        self.dpopSigningAlgValuesSupported = strings("dpop_signing_alg_values_supported") ?? []
        self.backchannelAuthenticationEndpoint = url("backchannel_authentication_endpoint")
        self.backchannelTokenDeliveryModesSupported = strings("backchannel_token_delivery_modes_supported") ?? []
        self.backchannelUserCodeParameterSupported = bool("backchannel_user_code_parameter_supported")
        self.backchannelAuthenticationRequestSigningAlgValuesSupported =
            strings("backchannel_authentication_request_signing_alg_values_supported") ?? []
        self.fields = fields
    }

    /// `mtls_endpoint_aliases` (RFC 8705 §5): the endpoints a client using mutual TLS sends to,
    /// by their metadata names (`token_endpoint`, `revocation_endpoint`, …); empty when absent.
    public var mtlsEndpointAliases: [String: URL] {
        guard let aliases = fields["mtls_endpoint_aliases"]?.objectValue else { return [:] }
        return aliases.compactMapValues { $0.stringValue.flatMap(URL.init(string:)) }
    }

    /// This metadata as `client` sends to it: when the client uses mutual TLS
    /// (`ClientAuthentication.usesMutualTLS`), every endpoint that ``mtlsEndpointAliases`` names is
    /// replaced by its alias (RFC 8705 §5: the server may serve mutual TLS on other hosts);
    /// otherwise the metadata as it is. Every flow and endpoint built here for a client uses it.
    public func resolved(for client: ClientAuthentication) -> AuthorizationServerMetadata {
        resolved(usingMutualTLS: client.usesMutualTLS)
    }

    /// This metadata with its mutual-TLS aliases in place of the endpoints they name when
    /// `usingMutualTLS` is `true`, as ``resolved(for:)`` does for a client that uses mutual TLS.
    public func resolved(usingMutualTLS: Bool) -> AuthorizationServerMetadata {
        guard usingMutualTLS, case .object(let aliases)? = fields["mtls_endpoint_aliases"] else { return self }
        var merged = fields
        for (name, alias) in aliases where name.hasSuffix("_endpoint") && alias.stringValue != nil {
            merged[name] = alias
        }
        return (try? AuthorizationServerMetadata(fields: merged)) ?? self
    }

    /// Reads metadata encoded by ``encode(to:)``: the JSON document, checked as on discovery.
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        guard let fields = value.objectValue else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "Metadata must be a JSON object."))
        }
        try self.init(fields: fields)
    }

    /// Encodes the metadata as the JSON document it was read from.
    public func encode(to encoder: any Encoder) throws {
        try JSONValue.object(fields).encode(to: encoder)
    }

    /// The metadata of `issuer`, kept in `store` next to the sessions: the stored copy while it is
    /// younger than `maximumAge` (no request at all); otherwise discovered again and stored, and
    /// when the server cannot be reached, the stored copy however old. So an app started without
    /// a network still knows its token endpoint and restores its session (then
    /// `OAuthAuthenticator.restore(metadata:client:account:store:configuration:)`).
    ///
    /// - Parameters:
    ///   - issuer: The issuer; the document must name it exactly.
    ///   - document: Which well-known document to read.
    ///   - store: Where the metadata is kept, next to the sessions (any `TokenStore`).
    ///   - maximumAge: How long a stored copy is used without asking the server; a day unless given.
    ///   - context: Transport and clock.
    /// - Throws: what ``discover(issuer:document:context:)`` throws, when there is no stored copy
    ///   to fall back on.
    public static func discover(
        issuer: URL,
        document: Document = .oauthAuthorizationServer,
        cachingIn store: any TokenStore,
        maximumAge: TimeInterval = 24 * 3600,
        context: AuthenticationContext = AuthenticationContext(transport: URLSessionTransport.shared)
    ) async throws -> AuthorizationServerMetadata {
        let key = "metadata|\(document.suffix)|\(issuer.absoluteString)"
        let stored = try? await store.load(forKey: key).flatMap {
            try? JSONDecoder().decode(StoredMetadata.self, from: $0)
        }
        let now = context.clock.now
        if let stored, stored.metadata.issuer == issuer.absoluteString,
            now.timeIntervalSince(stored.fetchedAt) < maximumAge,
            stored.fetchedAt <= now
        {
            return stored.metadata
        }
        do {
            let metadata = try await discover(issuer: issuer, document: document, context: context)
            if let data = try? JSONEncoder().encode(StoredMetadata(metadata: metadata, fetchedAt: now)) {
                try? await store.save(data, forKey: key)
            }
            return metadata
        } catch let error where !(error is DiscoveryError) {
            // Unreachable or failing: the last good copy still names the endpoints. A server that
            // answered with another issuer is not overruled by an old copy.
            guard let stored, stored.metadata.issuer == issuer.absoluteString else { throw error }
            return stored.metadata
        }
    }

    /// Metadata as kept in a store: the document and when it was fetched.
    private struct StoredMetadata: Codable {
        var metadata: AuthorizationServerMetadata
        var fetchedAt: Date
    }

    /// The metadata URL of `issuer` for `document`.
    public static func metadataURL(issuer: URL, document: Document = .oauthAuthorizationServer) -> URL? {
        guard var components = URLComponents(url: issuer, resolvingAgainstBaseURL: false) else { return nil }
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        components.path = document.insertsBeforePath ? "/\(document.suffix)\(path)" : "\(path)/\(document.suffix)"
        components.query = nil
        components.fragment = nil
        return components.url
    }

    /// Fetches the metadata of `issuer` and checks that it names the same issuer (RFC 8414 §3.3).
    public static func discover(
        issuer: URL,
        document: Document = .oauthAuthorizationServer,
        context: AuthenticationContext = AuthenticationContext(transport: URLSessionTransport.shared)
    ) async throws -> AuthorizationServerMetadata {
        guard let url = metadataURL(issuer: issuer, document: document) else {
            throw DiscoveryError(code: .invalidIssuer, expectedIssuer: issuer.absoluteString, issuer: nil)
        }
        return try await fetch(from: url, expectedIssuer: issuer.absoluteString, context: context)
    }

    /// ``discover(issuer:document:context:)`` over `authenticator`'s transport, clock and
    /// policy: set the transport once, on the authenticator.
    ///
    /// - Parameters:
    ///   - issuer: The issuer; the document must name it exactly.
    ///   - document: Which well-known document to read.
    ///   - authenticator: Whose context (transport, clock, policy) to use.
    public static func discover(
        issuer: URL,
        document: Document = .oauthAuthorizationServer,
        using authenticator: OAuthAuthenticator
    ) async throws -> AuthorizationServerMetadata {
        try await discover(issuer: issuer, document: document, context: authenticator.context)
    }

    /// Fetches metadata from `url` and checks that its `issuer` is exactly `expectedIssuer`.
    public static func fetch(
        from url: URL,
        expectedIssuer: String,
        context: AuthenticationContext = AuthenticationContext(transport: URLSessionTransport.shared)
    ) async throws -> AuthorizationServerMetadata {
        let reply = try await FormPost.get(url, context: context)
        let metadata = try AuthorizationServerMetadata(fields: FormPost.jsonObject(from: reply, now: context.clock.now))
        guard metadata.issuer == expectedIssuer else {
            throw DiscoveryError(code: .issuerMismatch, expectedIssuer: expectedIssuer, issuer: metadata.issuer)
        }
        return metadata
    }

    private func required(_ url: URL?, _ name: String) throws -> URL {
        guard let url else { throw TokenEndpointError(.missingEndpoint, "The metadata has no \(name).") }
        return url
    }

    /// The token endpoint for `client`.
    public func tokenEndpoint(client: ClientAuthentication) throws -> TokenEndpoint {
        TokenEndpoint(
            url: try required(resolved(for: client).tokenEndpoint, "token_endpoint"), client: client.at(issuer: issuer))
    }

    /// The revocation endpoint for `client`.
    public func revocationEndpoint(client: ClientAuthentication) throws -> RevocationEndpoint {
        RevocationEndpoint(
            url: try required(resolved(for: client).revocationEndpoint, "revocation_endpoint"),
            client: client.at(issuer: issuer))
    }

    /// A client credentials flow at this server.
    public func clientCredentialsFlow(
        client: ClientAuthentication,
        scope: String? = nil,
        additionalParameters: [String: String] = [:]
    ) throws -> ClientCredentialsFlow {
        ClientCredentialsFlow(
            tokenEndpoint: try required(resolved(for: client).tokenEndpoint, "token_endpoint"),
            client: client.at(issuer: issuer),
            scope: scope,
            additionalParameters: additionalParameters
        )
    }

    /// A refresh token flow at this server.
    public func refreshTokenFlow(client: ClientAuthentication, refreshToken: String) throws -> RefreshTokenFlow {
        RefreshTokenFlow(
            tokenEndpoint: try required(resolved(for: client).tokenEndpoint, "token_endpoint"),
            client: client.at(issuer: issuer),
            refreshToken: refreshToken)
    }

    /// A device authorization flow at this server.
    public func deviceAuthorizationFlow(
        client: ClientAuthentication,
        scope: String? = nil,
        onUserCode: @escaping @Sendable (DeviceAuthorization) async -> Void
    ) throws -> DeviceAuthorizationFlow {
        DeviceAuthorizationFlow(
            deviceAuthorizationEndpoint: try required(
                resolved(for: client).deviceAuthorizationEndpoint, "device_authorization_endpoint"),
            tokenEndpoint: try required(resolved(for: client).tokenEndpoint, "token_endpoint"),
            client: client.at(issuer: issuer),
            scope: scope,
            onUserCode: onUserCode
        )
    }

    /// A CIBA flow at this server (OpenID Connect CIBA Core 1.0).
    ///
    /// - Throws: `TokenEndpointError` `.missingEndpoint` when the server has no
    ///   `backchannel_authentication_endpoint` or token endpoint; `.invalidField` when it does not
    ///   list the delivery mode asked for in `backchannel_token_delivery_modes_supported`, or
    ///   when the request has a `user_code` and the server does not take one, or when it lists
    ///   `backchannel_authentication_request_signing_alg_values_supported` without the algorithm
    ///   of `requestObjectSigner` (which signs the request, CIBA Core §7.1.1, as FAPI-CIBA requires).
    public func backchannelAuthenticationFlow(
        client: ClientAuthentication,
        request: BackchannelAuthenticationRequest,
        deliveryMode: BackchannelAuthenticationFlow.DeliveryMode = .poll,
        requestObjectSigner: (any RequestObjectSigner)? = nil,
        onRequest: @escaping @Sendable (BackchannelAuthentication) async -> Void = { _ in }
    ) throws -> BackchannelAuthenticationFlow {
        let mode: String
        switch deliveryMode {
        case .poll: mode = "poll"
        case .ping: mode = "ping"
        }
        guard backchannelTokenDeliveryModesSupported.contains(mode) else {
            throw TokenEndpointError(
                .invalidField,
                "The server's backchannel_token_delivery_modes_supported does not list \(mode).",
                field: "backchannel_token_delivery_modes_supported")
        }
        if request.userCode != nil, !backchannelUserCodeParameterSupported {
            throw TokenEndpointError(
                .invalidField, "The server does not take a user_code (backchannel_user_code_parameter_supported).",
                field: "backchannel_user_code_parameter_supported")
        }
        let algorithms = backchannelAuthenticationRequestSigningAlgValuesSupported
        if let requestObjectSigner, !algorithms.isEmpty,
            !algorithms.contains(requestObjectSigner.requestObjectAlgorithm)
        {
            throw TokenEndpointError(
                .invalidField,
                "The server accepts signed authentication requests with \(algorithms.joined(separator: ", ")), not "
                    + "\(requestObjectSigner.requestObjectAlgorithm); nothing was sent.",
                field: "backchannel_authentication_request_signing_alg_values_supported")
        }
        var flow = BackchannelAuthenticationFlow(
            backchannelAuthenticationEndpoint: try required(
                resolved(for: client).backchannelAuthenticationEndpoint, "backchannel_authentication_endpoint"),
            tokenEndpoint: try required(resolved(for: client).tokenEndpoint, "token_endpoint"),
            client: client.at(issuer: issuer),
            request: request,
            deliveryMode: deliveryMode,
            onRequest: onRequest)
        if let requestObjectSigner {
            flow.requestObjectSigning = .init(signer: requestObjectSigner, audience: issuer)
        }
        return flow
    }
}

/// Metadata that cannot be trusted for the issuer asked for.
public struct DiscoveryError: Error, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The metadata's `issuer` differs from the one asked for (RFC 8414 §3.3): a possible mix-up.
        public static let issuerMismatch = Code("issuer mismatch")
        /// The issuer identifier is not a usable URL.
        public static let invalidIssuer = Code("invalid issuer")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// The issuer asked for.
    public let expectedIssuer: String
    /// The issuer the metadata named.
    public let issuer: String?

    /// What was expected and what came.
    public var description: String {
        "DiscoveryError(\(code)): expected issuer \(expectedIssuer), got \(issuer ?? "none")"
    }
}
