import AuthenticatedRequests
import Foundation
import OAuthFlows

/// Finds the client to use at an authorization server, following a ``ClientRegistrationPolicy``,
/// and keeps dynamic registrations in a `TokenStore` under the server's issuer.
///
/// A loopback redirect URI without a port (RFC 8252 §7.3, "any port") is registered with a port
/// chosen at registration, since some servers compare redirect URIs exactly, port included;
/// ``redirectURI(_:at:)`` gives the sign-in that exact URI, and the loopback user agent listens on
/// its port.
///
/// A registration is made once per issuer and store: concurrent callers in one process share one
/// request, and processes that share a store which coordinates processes (the file store, the
/// PostgreSQL store) take the store's lock, as they do for a refresh, so K processes starting
/// at once register once. A stored registration is reused until its secret expires or the app
/// asks for other redirect URIs; a new issuer always gets a registration of its own.
public actor ClientRegistrar {
    /// The policy followed.
    public let policy: ClientRegistrationPolicy
    /// Where registrations are kept.
    public let store: any TokenStore
    /// Transport and clock for registration requests.
    public let context: AuthenticationContext
    /// How long to wait for another process's registration.
    public let lockTimeout: TimeInterval

    private var inFlight: [String: Task<RegisteredClient, any Error>] = [:]

    /// Creates a registrar.
    public init(
        policy: ClientRegistrationPolicy,
        store: any TokenStore,
        context: AuthenticationContext,
        lockTimeout: TimeInterval = 60
    ) {
        self.policy = policy
        self.store = store
        self.context = context
        self.lockTimeout = lockTimeout
    }

    /// The store key of the registration at `issuer`: `client-registration@<issuer>`.
    public static func storeKey(issuer: String) -> String { "client-registration@\(issuer)" }

    /// The client to use at the server `metadata` describes, registering it when the policy
    /// says so and no usable registration is stored.
    ///
    /// - Throws: `ClientRegistrationError` (`ClientRegistrationError.Code.unavailable` when
    ///   the policy and the server have no way in common); the registration endpoint's errors.
    public func client(for metadata: AuthorizationServerMetadata) async throws -> ClientAuthentication {
        if let client = policy.preRegistered[metadata.issuer] { return client }
        if let document = policy.clientIDMetadataDocument,
            metadata.fields["client_id_metadata_document_supported"] == .bool(true)
        {
            return document.clientAuthentication(signer: policy.assertionSigner)
        }
        guard policy.dynamicRegistration != nil else {
            throw ClientRegistrationError(
                .unavailable,
                "No client is registered for \(metadata.issuer), and the policy allows no "
                    + (policy.clientIDMetadataDocument == nil
                        ? "registration."
                        : "registration other than a client ID metadata document, "
                            + "which the server does not support."))
        }
        return try await registration(at: metadata).clientAuthentication.with(policy.compatibility)
            .holding([policy.initialAccessToken].compactMap { $0 })
    }

    /// The client known for `metadata`'s server without any request: pre-registered, a Client ID
    /// Metadata Document the server supports, or a stored registration; `nil` when there is none.
    public func knownClient(for metadata: AuthorizationServerMetadata) async throws -> ClientAuthentication? {
        if let client = policy.preRegistered[metadata.issuer] { return client }
        if let document = policy.clientIDMetadataDocument,
            metadata.fields["client_id_metadata_document_supported"] == .bool(true)
        {
            return document.clientAuthentication(signer: policy.assertionSigner)
        }
        guard let data = try await store.load(forKey: Self.storeKey(issuer: metadata.issuer)),
            let stored = try? JSONDecoder().decode(RegisteredClient.self, from: data),
            stored.issuer == metadata.issuer, !stored.hasExpired(at: context.clock.now)
        else { return nil }
        return stored.clientAuthentication.with(policy.compatibility)
            .holding([policy.initialAccessToken].compactMap { $0 })
    }

    /// The stored dynamic registration at `metadata`'s issuer, or a new one.
    public func registration(at metadata: AuthorizationServerMetadata) async throws -> RegisteredClient {
        let issuer = metadata.issuer
        if let running = inFlight[issuer] { return try await running.value }
        let requested = try requestedMetadata(for: metadata)
        let endpoint = try ClientRegistrationEndpoint(metadata: metadata)
        let (store, context, timeout, token) = (self.store, self.context, lockTimeout, policy.initialAccessToken)
        let task = Task {
            let key = Self.storeKey(issuer: issuer)
            let usable: @Sendable () async throws -> RegisteredClient? = {
                guard let data = try await store.load(forKey: key),
                    let stored = try? JSONDecoder().decode(RegisteredClient.self, from: data),
                    stored.issuer == issuer, !stored.hasExpired(at: context.clock.now),
                    LoopbackRedirect.covers(stored.redirectURIs, requested.redirectURIs)
                else { return nil }
                return stored
            }
            if let stored = try await usable() { return stored }
            return try await store.withRefreshLock(forKey: key, timeout: timeout, adoptingAfterWait: usable) {
                if let stored = try await usable() { return stored }
                // The exact loopback URI the client will listen on, port included: servers that
                // compare redirect URIs exactly accept it, and so do those that allow any port.
                var pinned = requested
                pinned.redirectURIs = LoopbackRedirect.pinning(requested.redirectURIs)
                let registered = try await endpoint.register(pinned, initialAccessToken: token, context: context)
                try await store.save(try JSONEncoder().encode(registered), forKey: key)
                return registered
            }
        }
        inFlight[issuer] = task
        defer { inFlight[issuer] = nil }
        return try await task.value
    }

    /// The redirect URI a sign-in at `metadata`'s server uses for `redirectURI`: for a loopback
    /// URI without a port, the one the client registered there, port included (so that it
    /// listens where it registered); otherwise `redirectURI` itself.
    public func redirectURI(_ redirectURI: URL, at metadata: AuthorizationServerMetadata) async -> URL {
        guard LoopbackRedirect.isUnpinned(redirectURI), policy.preRegistered[metadata.issuer] == nil,
            let data = try? await store.load(forKey: Self.storeKey(issuer: metadata.issuer)),
            let stored = try? JSONDecoder().decode(RegisteredClient.self, from: data), stored.issuer == metadata.issuer
        else { return redirectURI }
        return LoopbackRedirect.registered(redirectURI, among: stored.redirectURIs)
    }

    /// Forgets the registration stored for `issuer` (for example after the server answered
    /// `invalid_client`): the next ``client(for:)`` registers again.
    public func forgetRegistration(at issuer: String) async throws {
        try await store.removeValue(forKey: Self.storeKey(issuer: issuer))
    }

    /// The policy's metadata, with a `token_endpoint_auth_method` the server supports: `none`
    /// for a public client when offered, else a secret (`client_secret_basic`, then `_post`),
    /// which a registration made for one installation may hold (RFC 8252 §8.5).
    func requestedMetadata(for server: AuthorizationServerMetadata) throws -> ClientMetadata {
        guard var metadata = policy.dynamicRegistration else {
            throw ClientRegistrationError(.unavailable, "The policy has no metadata to register.")
        }
        if !metadata.grantTypes.contains("refresh_token") { metadata.grantTypes.append("refresh_token") }
        let supported = server.tokenEndpointAuthMethodsSupported
        guard !supported.isEmpty else { return metadata }  // the server did not say: ask for what the app wants
        if let method = metadata.tokenEndpointAuthMethod, supported.contains(method) { return metadata }
        let usable = ["none", "client_secret_basic", "client_secret_post"]
        let allowed =
            metadata.tokenEndpointAuthMethod == nil || metadata.tokenEndpointAuthMethod == "none" ? usable : []
        guard let method = allowed.first(where: supported.contains) else {
            throw ClientRegistrationError(
                .unsupportedAuthenticationMethod,
                "\(server.issuer) supports none of the token endpoint authentication methods this client can use "
                    + "(it offers \(supported.joined(separator: ", "))).")
        }
        metadata.tokenEndpointAuthMethod = method
        return metadata
    }
}
