import AuthenticatedRequests
import DPoP
import Foundation
import OAuthFlows
import ResourceDiscovery

#if AsyncHTTPClient
    import AsyncHTTPClientTransport
    import NIOSSL
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A profile at work: its client, endpoints, token store and authenticator. Every command goes
/// through it, so they all use one store, one key per profile and one refresh algorithm (the
/// store's cross-process lock: many `authreq` processes at expiry make one refresh).
package struct ProfileSession: Sendable {
    /// The profile's name; also the account its session is stored under.
    package let name: String
    package let profile: Profile
    package let locations: Locations
    package let environment: [String: String]
    package let console: Console

    /// How long a cached discovery stays fresh.
    static let endpointCacheLifetime: TimeInterval = 24 * 3600

    package init(
        name: String, profile: Profile, locations: Locations, environment: [String: String], console: Console
    ) throws(CLIError) {
        try profile.validate(name: name)
        self.name = name
        self.profile = profile
        self.locations = locations
        self.environment = environment
        self.console = console
        self.proofOfPossession = profile.dpop == true ? DPoPProver() : nil
        self.transportChoice = Self.transport(for: profile, name: name)
    }

    /// The transport of every request: `URLSessionTransport.shared`, or for a profile with a client
    /// certificate (or its own CAs) an `AsyncHTTPClientTransport` presenting it.
    private let transportChoice: Result<any HTTPTransport, CLIError>

    /// The transport of this profile's requests.
    ///
    /// - Throws: ``CLIError`` (usage) for a client certificate in a build without the
    ///   `AsyncHTTPClient` trait: nothing is sent without it.
    package func transport() throws(CLIError) -> any HTTPTransport { try transportChoice.get() }

    private static func transport(for profile: Profile, name: String) -> Result<any HTTPTransport, CLIError> {
        guard profile.clientCertificate != nil || profile.caFile != nil else {
            return .success(URLSessionTransport.shared)
        }
        #if AsyncHTTPClient
            var tls = TLSConfiguration.makeClientConfiguration()
            if let caFile = profile.caFile { tls.trustRoots = .file((caFile as NSString).expandingTildeInPath) }
            let identity = profile.clientCertificate.flatMap { certificate in
                profile.clientKey.map { key in
                    ClientIdentity.pemFiles(
                        certificateChain: URL(fileURLWithPath: (certificate as NSString).expandingTildeInPath),
                        privateKey: URL(fileURLWithPath: (key as NSString).expandingTildeInPath))
                }
            }
            return .success(AsyncHTTPClientTransport(clientIdentity: identity, tlsConfiguration: tls))
        #else
            return .failure(
                .usage(
                    "Profile '\(name)' has a client certificate or CA file, which this authreq cannot use: build it "
                        + "with the AsyncHTTPClient trait (swift build --traits AsyncHTTPClient)."))
        #endif
    }

    /// The token store: a `FileTokenStore` shared by every `authreq` process of this user.
    package var store: FileTokenStore { FileTokenStore(directory: locations.tokensDirectory) }

    /// The proof of possession of the profile's tokens: a DPoP prover when the profile asks for
    /// DPoP (its key is kept with the session in the store, so every process proves with it).
    let proofOfPossession: (any ProofOfPossession)?

    /// The context of requests to the authorization server.
    var context: AuthenticationContext {
        // A transport that cannot be had never sends: client() reports it first, and a client
        // using mutual TLS refuses a transport without a certificate.
        AuthenticationContext(
            transport: (try? transportChoice.get()) ?? URLSessionTransport.shared, proofOfPossession: proofOfPossession)
    }

    // MARK: Client

    /// The client secret, from the profile's file (which only its owner may read) or its
    /// environment variable; `nil` when neither is set.
    package func clientSecret() throws(CLIError) -> String? {
        if let path = profile.clientSecretFile {
            let expanded = (path as NSString).expandingTildeInPath
            // Read as an assertion file is: a regular file of at most 64 KiB of UTF-8, never waited on.
            let text: String
            do {
                text = try AssertionFile.read(URL(fileURLWithPath: expanded), what: "The client secret file")
            } catch let error as AssertionError {
                throw .usage("Profile '\(name)': \(error.message)")
            } catch {
                throw .usage("Profile '\(name)': cannot read the client secret file \(expanded).")
            }
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: expanded) else {
                throw .usage("Profile '\(name)': cannot read the client secret file \(expanded).")
            }
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0
            guard mode & 0o077 == 0 else {
                throw .usage(
                    "The client secret file \(expanded) can be read by other users (mode "
                        + "\(String(mode, radix: 8))); run: chmod 600 \(expanded)")
            }
            let secret = text.trimmingCharacters(in: .newlines)
            guard !secret.isEmpty else { throw .usage("The client secret file \(expanded) is empty.") }
            return secret
        }
        if let secret = environment[profile.secretVariable], !secret.isEmpty { return secret }
        return nil
    }

    /// The client's authentication at the token endpoint.
    ///
    /// - Parameter requiringSecret: Whether to fail when a confidential method has no secret;
    ///   `false` for reading the store (the key names only the client id).
    package func client(requiringSecret: Bool = true) throws(CLIError) -> ClientAuthentication {
        if requiringSecret { _ = try transport() }
        let client = try clientAuthentication(requiringSecret: requiringSecret)
        // A certificate binds the tokens (RFC 8705 §3) whatever the method: the aliases are used.
        return profile.clientCertificate != nil && !client.usesMutualTLS ? client.usingMutualTLS() : client
    }

    private func clientAuthentication(requiringSecret: Bool) throws(CLIError) -> ClientAuthentication {
        let secret = requiringSecret ? try clientSecret() : ((try? clientSecret()) ?? nil)
        let method = profile.clientAuthentication ?? (secret == nil ? .none : .clientSecretBasic)
        switch method {
        case .tlsClientAuth:
            return .tlsClientAuth(id: profile.clientID)
        case .selfSignedTLSClientAuth:
            return .selfSignedTLSClientAuth(id: profile.clientID)
        case .none:
            return .none(id: profile.clientID)
        case .clientSecretBasic, .clientSecretPost:
            guard let secret else {
                if !requiringSecret { return .none(id: profile.clientID) }
                throw .usage(
                    "Profile '\(name)' needs a client secret: set client_secret_file (--client-secret-file) or "
                        + "$\(profile.secretVariable).")
            }
            return method == .clientSecretPost
                ? .clientSecretPost(id: profile.clientID, secret: secret)
                : ClientAuthentication.clientSecretBasic(id: profile.clientID, secret: secret).with(
                    profile.compatibility)
        }
    }

    // MARK: Endpoints

    /// The profile's endpoints: by hand, from the cache (fresh for a day), or discovered now
    /// (RFC 8414 metadata, else OpenID Connect discovery, for an OpenID provider that publishes
    /// only that) and cached. `login` passes `refresh` to discover again.
    package func endpoints(refresh: Bool = false) async throws -> ServerEndpoints {
        guard let issuer = profile.issuer else { return try endpointsByHand() }
        if !refresh, let cached = cachedEndpoints(of: issuer, maximumAge: Self.endpointCacheLifetime) {
            return cached
        }
        console.detail("discovering \(issuer.redactedForDisplay)")
        let metadata = try await AuthorizationServerMetadata.discover(
            anyDocumentOf: Self.issuerString(issuer), context: context)
        let endpoints = try ServerEndpoints(metadata: metadata, profile: profile)
        try endpoints.validate()
        try? PrivateFile.write(try endpoints.cached(), to: endpointsCacheFile)
        return endpoints
    }

    /// Where the discovered endpoints are cached.
    private var endpointsCacheFile: URL { locations.endpointsDirectory.appendingPathComponent("\(name).json") }

    /// The endpoints without the network: by hand, or cached at the last discovery however old
    /// (`login` always caches them); `nil` when the issuer's endpoints were never cached, which
    /// means this profile never signed in here.
    package func offlineEndpoints() throws -> ServerEndpoints? {
        guard let issuer = profile.issuer else { return try endpointsByHand() }
        return cachedEndpoints(of: issuer, maximumAge: .infinity)
    }

    /// The endpoints of a profile without an issuer: those it names.
    private func endpointsByHand() throws -> ServerEndpoints {
        guard let endpoints = ServerEndpoints(profile: profile) else {
            throw CLIError.usage("Profile '\(name)' needs an issuer or a token endpoint.")
        }
        return endpoints
    }

    private func cachedEndpoints(of issuer: URL, maximumAge: TimeInterval) -> ServerEndpoints? {
        let url = endpointsCacheFile
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
            let modified = attributes[.modificationDate] as? Date,
            Date().timeIntervalSince(modified) < maximumAge,
            let data = FileManager.default.contents(atPath: url.path),
            let cached = ServerEndpoints(cached: data), cached.issuer == Self.issuerString(issuer)
        else { return nil }
        console.detail("endpoints of \(issuer.redactedForDisplay) from \(url.path)")
        return cached
    }

    /// The issuer as metadata spells it: no trailing slash added or removed.
    static func issuerString(_ issuer: URL) -> String { issuer.absoluteString }

    // MARK: Sessions

    /// An authenticator with the verbose event log: subscribed before it is returned, so no
    /// event is missed, and printed to the end before the command exits (``EventLog``).
    func authenticator(flow: (any OAuthFlow)? = nil) async -> OAuthAuthenticator {
        let configuration = OAuthAuthenticator.Configuration(
            tokenTransport: context.transport, proofOfPossession: proofOfPossession)
        let authenticator =
            flow.map { OAuthAuthenticator(flow: $0, store: store, configuration: configuration) }
            ?? OAuthAuthenticator(store: store, configuration: configuration)
        if console.verbose { await EventLog.current?.follow(authenticator, printingTo: console) }
        return authenticator
    }

    /// The client credentials flow of this profile.
    func clientCredentialsFlow(endpoints: ServerEndpoints, client: ClientAuthentication) -> ClientCredentialsFlow {
        ClientCredentialsFlow(tokenEndpoint: endpoints.token, client: client, scope: profile.scope)
    }

    /// The JWT bearer flow of a workload profile: its token file, read for every grant.
    func jwtBearerFlow(endpoints: ServerEndpoints, client: ClientAuthentication) throws(CLIError) -> JWTBearerFlow {
        guard let file = profile.assertionFile else {
            throw .usage("Profile '\(name)' needs a workload token file: --assertion-file.")
        }
        return JWTBearerFlow(
            tokenEndpoint: endpoints.token, client: client, assertion: .file(URL(fileURLWithPath: file)),
            scope: profile.scope)
    }

    /// The stored session of this profile, or `nil` when there is none.
    ///
    /// - Parameter readOnly: Whether the caller only reads the session (`status`, `logout`,
    ///   `profile remove`): a missing client secret is no error, and nothing is asked of the
    ///   network (the endpoints come from the profile or the cache `login` wrote).
    /// The sign-in of a ``Profile/resource`` profile: discovery from the resource, the client
    /// registered in advance when the profile names one for its issuer, else registered
    /// dynamically as ``Profile/clientName`` and kept in the token store under the issuer.
    func resourceSignIn(_ resource: URL, method: ResourceSignIn.Method) throws -> ResourceSignIn {
        var policy = ClientRegistrationPolicy.dynamic(
            clientName: profile.clientName ?? "authreq",
            redirectURIs: [profile.redirectURI ?? ResourceSignIn.defaultRedirectURI],
            compatibility: profile.compatibility)
        if !profile.clientID.isEmpty, let issuer = profile.issuer {
            policy.preRegistered[issuer.absoluteString] = try client()
        }
        return ResourceSignIn(
            resource: resource, registration: policy, method: method, store: store,
            configuration: OAuthAuthenticator.Configuration(
                allowsInsecureHTTP: resource.isLoopbackHTTP, proofOfPossession: proofOfPossession),
            redirectURI: profile.redirectURI ?? ResourceSignIn.defaultRedirectURI,
            scope: profile.scope)
    }

    /// The sign-in method of a resource profile for requests and `token`: the enterprise chain
    /// when the profile names an ``Profile/enterpriseProfile`` (it needs no person), else none
    /// (the stored session is used and refreshed).
    func resourceMethod() async throws -> ResourceSignIn.Method {
        profile.enterpriseProfile == nil ? .nonInteractive : .enterpriseManaged(try await identityAssertionGrant())
    }

    /// The enterprise chain of this profile: the session of its ``Profile/enterpriseProfile`` at
    /// the enterprise's OpenID provider, whose ID token that provider exchanges for an ID-JAG.
    ///
    /// - Throws: ``CLIError`` (usage) when that profile does not exist; `needsSignIn` when it is
    ///   not signed in.
    func identityAssertionGrant() async throws -> IdentityAssertionGrant {
        guard let other = profile.enterpriseProfile else {
            throw CLIError.usage("Profile '\(name)' names no enterprise profile (--enterprise-profile).")
        }
        guard let enterprise = try ConfigurationFile.load(from: locations.configurationFile).profile(other) else {
            throw CLIError.usage("Profile '\(name)' names the enterprise profile '\(other)', which does not exist.")
        }
        let session = try ProfileSession(
            name: other, profile: enterprise, locations: locations, environment: environment, console: console)
        guard let authenticator = try await session.restore() else {
            throw CLIError.needsSignIn(
                "The enterprise profile '\(other)' is not signed in. Run: authreq login --profile \(other) "
                    + "(with the scope 'openid offline_access').")
        }
        return IdentityAssertionGrant(
            tokenEndpoint: try await session.endpoints().token, client: try session.client(),
            subject: .idToken(of: authenticator))
    }

    /// Where `login --resource` keeps what discovery found (the server's metadata and the scope),
    /// so that `status` and `logout` need no network.
    private var resourceCacheFile: URL { locations.endpointsDirectory.appendingPathComponent("\(name).resource.json") }

    /// Keeps what discovery found for a resource profile.
    func cacheResourceDiscovery(of flow: ResourceSignInFlow) {
        let record = CachedResourceDiscovery(server: flow.serverMetadata, scope: flow.scope)
        if let data = try? JSONEncoder().encode(record) { try? PrivateFile.write(data, to: resourceCacheFile) }
    }

    /// The flow of a resource profile: from what `login` cached when `readOnly` (no network;
    /// `nil` when nothing was cached), else from a new discovery.
    func resourceFlow(_ resource: URL, readOnly: Bool) async throws -> ResourceSignInFlow? {
        let signIn = try resourceSignIn(resource, method: readOnly ? .nonInteractive : try await resourceMethod())
        guard readOnly else {
            console.detail("discovering \(resource.redactedForDisplay)")
            return try await signIn.flow(account: name)
        }
        guard let data = FileManager.default.contents(atPath: resourceCacheFile.path),
            let cached = try? JSONDecoder().decode(CachedResourceDiscovery.self, from: data)
        else { return nil }
        return try await signIn.flow(server: cached.server, scope: cached.scope, account: name)
    }

    package func restore(readOnly: Bool = false) async throws -> OAuthAuthenticator? {
        if let resource = profile.resource {
            guard let flow = try await resourceFlow(resource, readOnly: readOnly) else { return nil }
            let authenticator = await authenticator(flow: flow)
            return try await authenticator.currentCredential() == nil ? nil : authenticator
        }
        let endpoints: ServerEndpoints
        if readOnly {
            guard let cached = try offlineEndpoints() else { return nil }
            endpoints = cached
        } else {
            endpoints = try await self.endpoints()
        }
        let client = try client(requiringSecret: !readOnly)
        if profile.grant == .clientCredentials || profile.grant == .jwtBearer {
            let flow: any OAuthFlow =
                profile.grant == .jwtBearer
                ? try jwtBearerFlow(endpoints: endpoints, client: client)
                : clientCredentialsFlow(endpoints: endpoints, client: client)
            let authenticator = await authenticator(flow: flow)
            if readOnly { return try await authenticator.currentCredential() == nil ? nil : authenticator }
            return authenticator  // obtains a token when there is none (the grant again): no sign-in needed
        }
        let authenticator = await authenticator()
        guard try await authenticator.restoreSession(tokenEndpoint: endpoints.token, client: client, account: name)
        else { return nil }
        return authenticator
    }

    /// The session for a request: restored, or ``ExitStatus/needsSignIn``.
    package func requireSession() async throws -> OAuthAuthenticator {
        guard let authenticator = try await restore() else {
            throw CLIError.needsSignIn("Profile '\(name)' is not signed in. Run: authreq login --profile \(name)")
        }
        return authenticator
    }
}

extension URL {
    /// Whether this is plain http to a loopback address: allowed for a resource on this machine.
    var isLoopbackHTTP: Bool { scheme?.lowercased() == "http" && isLoopback }
}

/// What `login --resource` found, kept for commands that need no network.
struct CachedResourceDiscovery: Codable {
    let server: AuthorizationServerMetadata
    let scope: String?
}
