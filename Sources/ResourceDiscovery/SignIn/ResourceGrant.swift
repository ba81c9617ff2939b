import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

/// One sign-in for several resources behind one authorization server, and one token per
/// resource (RFC 8707): each access token is for one resource only, and all of them come from
/// the grant's one refresh token.
///
/// ```swift
/// let grant = try await ResourceGrant.discover(
///     resources: [notesURL, calendarURL, filesURL],
///     registration: .dynamic(clientName: "Organizer"),
///     method: .browser(LoopbackUserAgent()),
///     store: FileTokenStore(directory: tokensFolder))
/// let notes = Notes(authenticator: grant.authenticator(for: notesURL))
/// ```
///
/// The first request to any of the resources signs in once, naming all of them on the
/// authorization request, and exchanges the code for a token for that resource; the others get
/// theirs with the refresh token, naming their resource. Each resource's token is an
/// `OAuthAuthenticator` of its own (stored, refreshed ahead of expiry and coordinated across
/// processes like any other), but the refresh token lives in one place, the grant's store entry,
/// and every use of it is serialized under the store's lock (across processes) and in this
/// process, so a server that rotates refresh tokens never sees a rotated-out one.
public final class ResourceGrant: Sendable {
    /// The resources, canonical (no query or fragment).
    public let resources: [URL]
    /// The authorization server's issuer.
    public let issuer: String
    /// The token endpoint and the client.
    public let endpoint: TokenEndpoint
    /// The scope asked for at the sign-in.
    public let scope: String?
    /// The account named by the app, if any.
    public let account: String?
    private let server: AuthorizationServerMetadata
    private let method: ResourceSignIn.Method
    private let redirectURI: URL
    private let store: any TokenStore
    private let configuration: OAuthAuthenticator.Configuration
    private let turns = SerialTurns()

    /// Discovers each resource (each must name the same authorization server), finds or
    /// registers the client once, and returns the grant; nothing is signed in yet.
    ///
    /// - Parameters:
    ///   - resources: the resources' URLs.
    ///   - registration: how to get a client id.
    ///   - method: how to sign in (the browser for a user; a non-interactive grant signs in never).
    ///   - store: where the grant and the tokens are kept.
    ///   - configuration: the authenticators' settings.
    ///   - redirectURI: the browser sign-in's redirect URI.
    ///   - scope: the scope to ask for; by default the union of what the resources ask for.
    ///   - account: names the user's session when one app holds several.
    /// - Throws: what `ResourceSignIn.discover(challenges:)` throws; ``ResourceDiscoveryError/Code/noAuthorizationServer``
    ///   when the resources have no authorization server in common.
    public static func discover(
        resources: [URL],
        registration: ClientRegistrationPolicy,
        method: ResourceSignIn.Method,
        store: any TokenStore,
        configuration: OAuthAuthenticator.Configuration = .init(),
        redirectURI: URL = ResourceSignIn.defaultRedirectURI,
        scope: String? = nil,
        account: String? = nil
    ) async throws -> ResourceGrant {
        guard let first = resources.first else {
            throw ResourceDiscoveryError(.noAuthorizationServer, "No resource was given.")
        }
        let registrar = ResourceSignIn(
            resource: first, registration: registration, method: method, store: store, configuration: configuration
        ).registrar
        var discoveries: [ResourceSignIn.Discovery] = []
        for resource in resources {
            let signIn = ResourceSignIn(
                resource: resource, registrar: registrar, method: method, store: store, configuration: configuration)
            discoveries.append(try await signIn.discover())
        }
        let issuers = discoveries.map(\.serverMetadata.issuer)
        guard let server = discoveries.first?.serverMetadata, Set(issuers).count == 1 else {
            throw ResourceDiscoveryError(
                .noAuthorizationServer,
                "The resources name different authorization servers (\(Set(issuers).sorted().joined(separator: ", "))); "
                    + "sign in to each with a ResourceSignIn of its own.")
        }
        if case .browser = method.kind, !server.codeChallengeMethodsSupported.contains("S256") {
            throw ResourceDiscoveryError(
                .pkceUnsupported,
                "\(server.issuer) does not list S256 in code_challenge_methods_supported; no browser was opened.")
        }
        let client = try await registrar.client(for: server)
        let registeredRedirectURI = await registrar.redirectURI(redirectURI, at: server)
        let registeredPort = registeredRedirectURI.absoluteString != redirectURI.absoluteString
        var scopes: [String] = []
        for discovery in discoveries {
            let asked = discovery.challengedScope ?? discovery.resourceMetadata.scopesSupported.joined(separator: " ")
            for scope in asked.split(separator: " ").map(String.init) where !scopes.contains(scope) {
                scopes.append(scope)
            }
        }
        return ResourceGrant(
            resources: try resources.map(ProtectedResourceMetadata.canonical), server: server,
            endpoint: try server.tokenEndpoint(client: client),
            scope: scope ?? (scopes.isEmpty ? nil : scopes.joined(separator: " ")),
            method: registeredPort ? method.listeningOnAnyPortWhenBusy : method, redirectURI: registeredRedirectURI,
            store: store, configuration: configuration, account: account)
    }

    init(
        resources: [URL], server: AuthorizationServerMetadata, endpoint: TokenEndpoint, scope: String?,
        method: ResourceSignIn.Method, redirectURI: URL, store: any TokenStore,
        configuration: OAuthAuthenticator.Configuration, account: String?
    ) {
        self.resources = resources
        self.server = server
        self.issuer = server.issuer
        self.endpoint = endpoint
        self.scope = scope
        self.method = method
        self.redirectURI = redirectURI
        self.store = store
        self.configuration = configuration
        self.account = account
    }

    /// The store entry of the grant's refresh token:
    /// `<client id>@<token endpoint>[#account=<account>]#grant`.
    public var storeKey: String { endpoint.storeKey(account: account) + "#grant" }

    /// The authenticator of `resource`'s token; `resource` must be one of ``resources``.
    ///
    /// - Throws: ``ResourceDiscoveryError/Code/resourceMismatch`` for a resource the grant is not for.
    public func authenticator(for resource: URL) throws -> OAuthAuthenticator {
        OAuthAuthenticator(flow: try flow(for: resource), store: store, configuration: configuration)
    }

    /// The flow of `resource`'s token.
    public func flow(for resource: URL) throws -> ResourceGrantFlow {
        let canonical = try ProtectedResourceMetadata.canonical(resource)
        guard resources.contains(canonical) else {
            throw ResourceDiscoveryError(
                .resourceMismatch, "The grant is not for \(resource.redactedForDisplay); it was not used.")
        }
        return ResourceGrantFlow(grant: self, resource: canonical)
    }

    /// A token for `resource`: from the grant's refresh token, or, when there is none yet, from
    /// the one sign-in. One at a time in this process, and under the store's lock across
    /// processes.
    func token(for resource: URL, context: AuthenticationContext) async throws -> OAuthToken {
        try await turns.run { [self] in
            try await store.withRefreshLock(forKey: storeKey, timeout: configuration.storeLockTimeout) {
                try await tokenInTurn(for: resource, context: context)
            }
        }
    }

    private func tokenInTurn(for resource: URL, context: AuthenticationContext) async throws -> OAuthToken {
        var token: OAuthToken
        if let stored = try await store.load(forKey: storeKey),
            let refreshToken = try? JSONDecoder().decode(GrantRecord.self, from: stored).refreshToken
        {
            var resourceEndpoint = endpoint
            resourceEndpoint.resources = [resource]
            let grant = OAuthToken(accessToken: "", tokenType: "Bearer", expiresAt: nil, refreshToken: refreshToken)
            do {
                token = try await resourceEndpoint.refresh(grant, context: context)
            } catch let error as OAuthError where error.code == .invalidGrant {
                try? await store.removeValue(forKey: storeKey)  // the grant is over: the next request signs in
                throw error
            }
        } else {
            token = try await signIn(for: resource, context: context)
        }
        if let refreshToken = token.refreshToken {
            try await store.save(try JSONEncoder().encode(GrantRecord(refreshToken: refreshToken)), forKey: storeKey)
        }
        token.refreshToken = nil  // kept once, in the grant's entry
        return token
    }

    private func signIn(for resource: URL, context: AuthenticationContext) async throws -> OAuthToken {
        try await method.obtainToken(
            at: server, endpoint: endpoint, scope: scope, resources: resources, exchangedFor: resource,
            redirectURI: redirectURI, account: account, context: context
        ) {
            ResourceDiscoveryError(
                .interactionRequired,
                "\(resource.redactedForDisplay) needs a sign-in at \(issuer), and this context cannot ask the user.")
        }
    }

    /// What the grant's store entry holds.
    struct GrantRecord: Codable {
        let refreshToken: String
    }
}

/// The flow of one resource's token within a ``ResourceGrant``: its first token and every
/// refresh come from the grant, naming the resource.
public struct ResourceGrantFlow: OAuthFlow, CustomStringConvertible {
    /// The grant.
    public let grant: ResourceGrant
    /// The resource the tokens are for.
    public let resource: URL

    /// The grant's key followed by `#resource=<resource>`.
    public var storeKey: String { grant.storeKey + "#resource=\(resource.absoluteString)" }

    /// A token for the resource from the grant (signing in once when there is no grant yet).
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        try await grant.token(for: resource, context: context)
    }

    /// A new token for the resource from the grant's refresh token.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        try await grant.token(for: resource, context: context)
    }

    /// The resource: its tokens go to its URLs only.
    public var resourceBoundary: ResourceBoundary? { ResourceBoundary(resource) }

    /// The resource and the issuer.
    public var description: String {
        "ResourceGrantFlow(\(resource.redactedForDisplay) at \(grant.issuer))"
    }
}

/// Runs bodies one at a time, in the order they arrive.
final class SerialTurns: Sendable {
    private let last = Locked<Task<Void, Never>?>(nil)

    func run<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let (previous, done) = last.withLock { last -> (Task<Void, Never>?, OneShot<Void>) in
            let done = OneShot<Void>()
            let previous = last
            last = Task { try? await done.value() }
            return (previous, done)
        }
        defer { done.finish(with: .success(())) }
        await previous?.value
        return try await body()
    }
}
