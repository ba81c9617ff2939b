import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Signs in to a protected resource from nothing but its URL: the resource's `401` names its
/// metadata (RFC 9728), the metadata names the authorization server, the server's metadata says
/// how to register, and the user signs in for that resource (RFC 8707) with PKCE S256.
///
/// ```swift
/// let signIn = ResourceSignIn(
///     resource: URL(string: "https://api.example.com/notes")!,
///     registration: .dynamic(clientName: "Notes"),
///     method: .browser(LoopbackUserAgent()),
///     store: FileTokenStore(directory: tokensFolder)
/// )
/// let authenticator = try await signIn.authenticator()
/// // Requests through `authenticator` sign in at the first one, then refresh as usual.
/// ```
///
/// ``authenticator(account:challenges:)`` runs the discovery and the registration (both reused from the
/// store by later launches and other processes), and returns an `OAuthAuthenticator` whose
/// flow is a ``ResourceSignInFlow``: the first request signs in, every refresh names the
/// resource, and the session is stored under the client, the token endpoint and the resource.
public struct ResourceSignIn: Sendable {
    /// The loopback redirect URI of dynamic registration by default: `http://127.0.0.1/callback`,
    /// registered with a port chosen at registration (see ``ClientRegistrar``).
    public static let defaultRedirectURI: URL = {
        var components = URLComponents()
        (components.scheme, components.host, components.path) = ("http", "127.0.0.1", "/callback")
        return components.url ?? URL(fileURLWithPath: "/callback")  // never nil: all parts are valid
    }()

    /// How the user (or the client itself) obtains the first token.
    public struct Method: Sendable {
        enum Kind: Sendable {
            case browser(any AuthorizationUserAgent)
            case clientCredentials
            case jwtBearer(AssertionSource)
            case enterpriseManaged(IdentityAssertionGrant)
            case nonInteractive
        }
        let kind: Kind

        /// Whether the client signs in as itself or a workload, never with a person: no browser,
        /// and at expiry the grant again when no refresh token was issued.
        var isMachine: Bool {
            switch kind {
            case .clientCredentials, .jwtBearer, .enterpriseManaged: true
            case .browser, .nonInteractive: false
            }
        }

        /// The authorization code flow with PKCE S256 in `userAgent` (a browser, a web
        /// authentication session, a loopback receiver).
        public static func browser(_ userAgent: any AuthorizationUserAgent) -> Method {
            Method(kind: .browser(userAgent))
        }
        /// The client credentials grant: a server signing in as itself, with a pre-registered
        /// confidential client.
        public static let clientCredentials = Method(kind: .clientCredentials)
        /// The JWT bearer grant (RFC 7523 §2.1) with a workload's assertion, asked from `assertion`
        /// for every grant (a Kubernetes projected service-account token, a SPIFFE JWT-SVID,
        /// GitHub Actions' token, one the client signs): no browser, a pre-registered client,
        /// `resource` on every token request, the scope from the challenge. The server must trust
        /// the assertion's issuer (MCP's workload identity federation).
        public static func jwtBearer(_ assertion: AssertionSource) -> Method {
            Method(kind: .jwtBearer(assertion))
        }
        /// Enterprise-Managed Authorization (MCP's SEP-990): the user's session at the enterprise's
        /// identity provider is exchanged there for an ID-JAG naming the discovered authorization
        /// server (`audience`) and the resource, and that server grants the access token for it
        /// with the JWT bearer grant. No browser opens; the client at the authorization server is
        /// pre-registered (the ID-JAG names its `client_id`). At expiry the chain runs again from
        /// the session's ID token, refreshed at the provider first when it has expired.
        public static func enterpriseManaged(_ grant: IdentityAssertionGrant) -> Method {
            Method(kind: .enterpriseManaged(grant))
        }
        /// No sign-in: a stored session is used and refreshed, and a request that needs the
        /// user fails with ``ResourceDiscoveryError/Code/interactionRequired``.
        public static let nonInteractive = Method(kind: .nonInteractive)
    }

    /// The resource: its identifier, compared exactly with its metadata's `resource`.
    public let resource: URL
    /// Finds or registers the client at the authorization server; copies of this value share
    /// it, so their registrations are made once.
    public let registrar: ClientRegistrar
    /// How the first token is obtained.
    public var method: Method
    /// Where sessions and registrations are kept.
    public var store: any TokenStore
    /// The authenticator's settings: transports, clock, DPoP, timeouts.
    public var configuration: OAuthAuthenticator.Configuration
    /// The redirect URI for the browser sign-in. A loopback one without a port is registered with
    /// a port chosen at registration, and the sign-in listens on that port.
    public var redirectURI: URL
    /// A scope to ask for instead of the challenge's or the metadata's.
    public var scope: String?
    /// Whether a resource that publishes no metadata is signed in to as the MCP revision
    /// 2025-03-26 said: its origin is its authorization server, whose metadata is at the origin's
    /// root, and an origin without metadata serves `/authorize`, `/token` and `/register`. Off
    /// by default: it trusts whatever answers at the resource's origin to issue its tokens, which
    /// RFC 9728 metadata otherwise says explicitly.
    public var legacyMCPDiscovery = false

    /// Creates a sign-in with a registrar of its own for `registration`, keeping registrations
    /// in `store`.
    ///
    /// - Parameters:
    ///   - resource: the protected resource's URL (for an MCP server, its endpoint).
    ///   - registration: how to get a client id.
    ///   - method: how to obtain the first token.
    ///   - store: where sessions and registrations are kept.
    ///   - configuration: the authenticator's settings.
    ///   - redirectURI: the browser sign-in's redirect URI.
    ///   - scope: the scope to ask for; by default the challenge's `scope`, else the resource
    ///     metadata's `scopes_supported`, else none.
    public init(
        resource: URL,
        registration: ClientRegistrationPolicy,
        method: Method,
        store: any TokenStore,
        configuration: OAuthAuthenticator.Configuration = .init(),
        redirectURI: URL = ResourceSignIn.defaultRedirectURI,
        scope: String? = nil
    ) {
        let registrar = ClientRegistrar(
            policy: registration, store: store, context: configuration.context,
            lockTimeout: configuration.storeLockTimeout)
        self.init(
            resource: resource, registrar: registrar, method: method, store: store, configuration: configuration,
            redirectURI: redirectURI, scope: scope)
    }

    /// Creates a sign-in that shares `registrar` (and so its registrations) with others, for
    /// an app that reaches several resources.
    ///
    /// - Parameters:
    ///   - resource: the protected resource's URL.
    ///   - registrar: finds or registers the client.
    ///   - method: how to obtain the first token.
    ///   - store: where sessions are kept.
    ///   - configuration: the authenticator's settings.
    ///   - redirectURI: the browser sign-in's redirect URI.
    ///   - scope: the scope to ask for instead of the challenge's or the metadata's.
    public init(
        resource: URL,
        registrar: ClientRegistrar,
        method: Method,
        store: any TokenStore,
        configuration: OAuthAuthenticator.Configuration = .init(),
        redirectURI: URL = ResourceSignIn.defaultRedirectURI,
        scope: String? = nil
    ) {
        self.resource = resource
        self.registrar = registrar
        self.method = method
        self.store = store
        self.configuration = configuration
        self.redirectURI = redirectURI
        self.scope = scope
    }

    /// What discovery found: the resource's and its authorization server's metadata, and the
    /// scope the resource asked for.
    public struct Discovery: Sendable {
        /// The resource's metadata.
        public let resourceMetadata: ProtectedResourceMetadata
        /// The chosen authorization server's metadata.
        public let serverMetadata: AuthorizationServerMetadata
        /// The challenge's `scope`, if the resource's `401` had one.
        public let challengedScope: String?

        /// The first `scope` the challenges name.
        static func scope(in challenges: [AuthenticationChallenge]) -> String? {
            challenges.lazy.compactMap { $0.parameters["scope"] }.first
        }
    }

    /// Reads the resource's metadata and its authorization server's, starting from the challenge
    /// the resource sent (`WWW-Authenticate` of its `401` or `403`, RFC 9728 §5.1): its
    /// `resource_metadata` is where the metadata is read, and its `scope` is asked for first.
    ///
    /// - Parameter challenges: the challenges of the response that made the sign-in necessary,
    ///   as `AuthenticationChallenge.parse(_:)` reads its `WWW-Authenticate` header. `nil` (a
    ///   sign-in started before any request) asks the resource for one first, with a request of
    ///   its own without any credential.
    /// - Throws: ``ResourceDiscoveryError``: ``ResourceDiscoveryError/Code/insecureURL`` for a
    ///   resource that is plain http to another host than loopback (nothing is sent),
    ///   ``ResourceDiscoveryError/Code/resourceMismatch``,
    ///   ``ResourceDiscoveryError/Code/issuerMismatch``,
    ///   ``ResourceDiscoveryError/Code/noAuthorizationServer``; transport errors.
    public func discover(challenges: [AuthenticationChallenge]? = nil) async throws -> Discovery {
        let context = configuration.context
        guard resource.isSafeForSecrets || (configuration.allowsInsecureHTTP && resource.host != nil) else {
            throw ResourceDiscoveryError(
                .insecureURL,
                "Refusing to sign in to \(resource.redactedForDisplay): use https (or http to a loopback address).")
        }
        var challenged = challenges ?? []
        if challenges == nil {
            challenged = try await ProtectedResourceMetadata.challenges(of: resource, context: context)
        }
        let resourceMetadata: ProtectedResourceMetadata
        do {
            resourceMetadata = try await ProtectedResourceMetadata.discover(
                for: resource, challenges: challenged, context: context)
        } catch let error as ResourceDiscoveryError where error.code == .notFound && legacyMCPDiscovery {
            return try await legacyDiscovery(challenges: challenged)
        }
        let issuer =
            resourceMetadata.authorizationServers.first { registrar.policy.preRegistered[$0] != nil }
            ?? resourceMetadata.authorizationServers.first
        guard let issuer else {
            throw ResourceDiscoveryError(
                .noAuthorizationServer,
                "The metadata of \(resource.redactedForDisplay) names no authorization server.")
        }
        let serverMetadata = try await AuthorizationServerMetadata.discover(anyDocumentOf: issuer, context: context)
        return Discovery(
            resourceMetadata: resourceMetadata, serverMetadata: serverMetadata,
            challengedScope: Discovery.scope(in: challenged))
    }

    /// Discovers the resource's authorization server, finds or registers the client, and
    /// returns an authenticator for the resource: its stored session if there is one, else one
    /// that signs in at the first request.
    ///
    /// - Parameters:
    ///   - account: names the user's session when one app holds several.
    ///   - challenges: the challenges of the resource's response that made the sign-in necessary;
    ///     `nil` asks the resource for one first (see ``discover(challenges:)``).
    /// - Throws: what ``flow(account:challenges:)`` throws.
    public func authenticator(account: String? = nil, challenges: [AuthenticationChallenge]? = nil) async throws
        -> OAuthAuthenticator
    {
        OAuthAuthenticator(
            flow: try await flow(account: account, challenges: challenges), store: store, configuration: configuration)
    }

    /// The flow for a server that an earlier discovery found (`flow.serverMetadata`, kept by the
    /// app), without any request: for showing or deleting a stored session offline. `nil` when no
    /// client is known for that server (nothing was registered there yet).
    ///
    /// - Parameters:
    ///   - server: the authorization server's metadata from an earlier discovery.
    ///   - scope: the scope the session was signed in with.
    ///   - account: names the user's session when one app holds several.
    public func flow(server: AuthorizationServerMetadata, scope: String?, account: String? = nil) async throws
        -> ResourceSignInFlow?
    {
        guard let client = try await registrar.knownClient(for: server) else { return nil }
        return try makeFlow(
            server: server, client: client, scope: self.scope ?? scope, account: account,
            redirectURI: await registrar.redirectURI(redirectURI, at: server))
    }

    /// Discovers the resource's authorization server and finds or registers the client: the
    /// flow that ``authenticator(account:challenges:)`` configures.
    ///
    /// - Parameters:
    ///   - account: names the user's session when one app holds several.
    ///   - challenges: the challenges of the resource's response that made the sign-in necessary;
    ///     `nil` asks the resource for one first (see ``discover(challenges:)``).
    /// - Throws: what ``discover(challenges:)`` throws; ``ResourceDiscoveryError/Code/pkceUnsupported``
    ///   for a browser sign-in at a server whose metadata lacks S256; `ClientRegistrationError` when
    ///   the client refuses what the server offers (no way to register, an unusable method or
    ///   reply); `OAuthError` when the registration endpoint refuses the client (RFC 7591 §3.2.2,
    ///   e.g. `invalid_redirect_uri`); `TokenEndpointError` for a registration reply that is neither.
    public func flow(account: String? = nil, challenges: [AuthenticationChallenge]? = nil) async throws
        -> ResourceSignInFlow
    {
        let discovery = try await discover(challenges: challenges)
        let server = discovery.serverMetadata
        if case .browser = method.kind, !server.codeChallengeMethodsSupported.contains("S256") {
            throw ResourceDiscoveryError(
                .pkceUnsupported,
                "\(server.issuer) does not list S256 in code_challenge_methods_supported; no browser was opened.")
        }
        let client = try await registrar.client(for: server)
        var flow = try makeFlow(
            server: server, client: client, scope: requestedScope(for: discovery), account: account,
            redirectURI: await registrar.redirectURI(redirectURI, at: server))
        let policy = registrar.policy
        let preRegistered = policy.preRegistered[server.issuer] != nil
        let byDocument = policy.clientIDMetadataDocument.map { $0.url.absoluteString == client.clientID } ?? false
        if !preRegistered && !byDocument { flow.registrar = registrar }
        return flow
    }
}

extension ResourceSignIn {
    /// The scope to ask for: ``scope`` if set, else the challenge's, else the resource's
    /// `scopes_supported`, else none; for a browser sign-in, with `offline_access` added when the
    /// authorization server lists it (so that it issues a refresh token), and never otherwise.
    func requestedScope(for discovery: Discovery) -> String? {
        if let scope { return scope }
        let asked =
            discovery.challengedScope
            ?? (discovery.resourceMetadata.scopesSupported.isEmpty
                ? nil : discovery.resourceMetadata.scopesSupported.joined(separator: " "))
        guard case .browser = method.kind, discovery.serverMetadata.scopesSupported.contains("offline_access") else {
            return asked
        }
        let scopes = (asked ?? "").split(separator: " ").map(String.init)
        return (scopes.contains("offline_access") ? scopes : scopes + ["offline_access"]).joined(separator: " ")
    }

    /// The discovery of ``legacyMCPDiscovery``: the resource's origin as its authorization
    /// server, its metadata at the origin's root, else the default endpoints.
    func legacyDiscovery(challenges: [AuthenticationChallenge]) async throws -> Discovery {
        let context = configuration.context
        let origin = ProtectedResourceMetadata.origin(of: resource)
        guard !origin.isEmpty else {
            throw ResourceDiscoveryError(.invalidMetadata, "\(resource.redactedForDisplay) has no origin.")
        }
        let serverMetadata: AuthorizationServerMetadata
        do {
            serverMetadata = try await AuthorizationServerMetadata.discover(anyDocumentOf: origin, context: context)
        } catch let error as ResourceDiscoveryError where error.code == .notFound {
            // The revision's defaults for a server without metadata (its §2.3.3).
            serverMetadata = try AuthorizationServerMetadata(fields: [
                "issuer": .string(origin),
                "authorization_endpoint": .string(origin + "/authorize"),
                "token_endpoint": .string(origin + "/token"),
                "registration_endpoint": .string(origin + "/register"),
                "code_challenge_methods_supported": .array([.string("S256")]),
            ])
        }
        let resourceMetadata = try ProtectedResourceMetadata(fields: [
            "resource": .string(try ProtectedResourceMetadata.canonical(resource).absoluteString),
            "authorization_servers": .array([.string(origin)]),
        ])
        return Discovery(
            resourceMetadata: resourceMetadata, serverMetadata: serverMetadata,
            challengedScope: Discovery.scope(in: challenges))
    }

    /// The flow of this resource at `server` with `client`, signing in through `redirectURI`.
    func makeFlow(
        server: AuthorizationServerMetadata, client: ClientAuthentication, scope: String?, account: String?,
        redirectURI: URL
    ) throws -> ResourceSignInFlow {
        // A port chosen at registration (the sign-in's own URI had none) may give way to any port
        // when another sign-in holds it.
        let registeredPort = redirectURI.absoluteString != self.redirectURI.absoluteString
        return try ResourceSignInFlow(
            resource: try ProtectedResourceMetadata.canonical(resource), server: server, client: client,
            scope: scope, method: registeredPort ? method.listeningOnAnyPortWhenBusy : method,
            redirectURI: redirectURI, account: account)
    }
}

extension ResourceSignIn.Method {
    /// This method, whose browser listens on any port when the redirect URI's (chosen at
    /// registration) is held by another sign-in.
    var listeningOnAnyPortWhenBusy: ResourceSignIn.Method {
        guard case .browser(let userAgent) = kind else { return self }
        return .browser(RegisteredPortUserAgent(base: userAgent))
    }

    /// Obtains a token as this method says: the browser (PKCE, the `resources` on the
    /// authorization request, `exchangedFor` at the code exchange, `parameters` added), the
    /// client credentials or JWT bearer grant for `exchangedFor`, or the error
    /// `interactionRequired` makes.
    func obtainToken(
        at server: AuthorizationServerMetadata,
        endpoint: TokenEndpoint,
        scope: String?,
        parameters: [String: String] = [:],
        resources: [URL],
        exchangedFor resource: URL? = nil,
        redirectURI: URL,
        account: String?,
        context: AuthenticationContext,
        interactionRequired: () -> any Error
    ) async throws -> OAuthToken {
        let target = resource.map { [$0] } ?? resources
        switch kind {
        case .browser(let userAgent):
            var configuration = try AuthenticationConfiguration(
                metadata: server, client: endpoint.client, redirectURI: redirectURI, scope: scope,
                additionalParameters: parameters, resources: resources)
            configuration.tokenRequestResources = target
            let manager = CodeFlowManager(configuration: configuration, userAgent: userAgent, context: context)
            return try await manager.authorize(account: account).token
        case .clientCredentials:
            return try await ClientCredentialsFlow(
                tokenEndpoint: endpoint.url, client: endpoint.client, scope: scope, resources: target
            ).obtainToken(for: context)
        case .jwtBearer(let assertion):
            return try await JWTBearerFlow(
                tokenEndpoint: endpoint.url, client: endpoint.client, assertion: assertion, scope: scope,
                resources: target
            ).obtainToken(for: context)
        case .enterpriseManaged(let grant):
            return try await JWTBearerFlow(
                tokenEndpoint: endpoint.url, client: endpoint.client,
                assertion: grant.assertion(audience: server.issuer, resource: target.first, scope: scope),
                scope: scope, resources: target
            ).obtainToken(for: context)
        case .nonInteractive:
            throw interactionRequired()
        }
    }
}
