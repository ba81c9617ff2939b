#if MCP
    import AuthenticatedRequests
    import Foundation
    import MCP
    import OAuthFlows
    import ResourceDiscovery

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// An authorizer for the MCP Swift SDK's `HTTPClientTransport` that runs on this package's
    /// engine: the MCP server is signed in to from its URL alone (`ResourceSignIn`: RFC 9728
    /// discovery, client registration, PKCE S256, `resource` on every request), one refresh serves
    /// every concurrent MCP request, the refresh token survives the access token's expiry and a
    /// server that does not rotate it, and the session lives in any `TokenStore`.
    ///
    /// ```swift
    /// let authorizer = MCPAuthorizer(signIn: ResourceSignIn(
    ///     resource: serverURL, registration: .dynamic(clientName: "My Agent"),
    ///     method: .browser(LoopbackUserAgent()), store: FileTokenStore(directory: tokensFolder)))
    /// let transport = HTTPClientTransport(endpoint: serverURL, authorizer: authorizer)
    /// ```
    ///
    /// The transport asks for the `Authorization` header synchronously; the authorizer answers
    /// from a snapshot that ``prepareAuthorization(for:session:)`` (before every request) and
    /// ``handleChallenge(statusCode:headers:endpoint:operationKey:session:)`` (after a `401` or
    /// `403`) keep current, and never with a token that has expired by the authenticator's clock.
    ///
    /// Thread safety: every mutable property is behind a lock (`Locked`), so the class is
    /// `Sendable` without `@unchecked`.
    public final class MCPAuthorizer: HTTPClientAuthorizer {
        /// How the MCP server is signed in to.
        public let signIn: ResourceSignIn

        private struct Snapshot {
            var header: String
            var expiresAt: Date?
        }

        private let snapshot = Locked<Snapshot?>(nil)
        private let authenticatorTask = Locked<Task<OAuthAuthenticator, any Error>?>(nil)

        /// Creates an authorizer for the MCP server `signIn` names.
        public init(signIn: ResourceSignIn) {
            self.signIn = signIn
        }

        /// `2`: a sign-in or refresh, then a step-up, at most, for one request.
        public var maxAuthorizationAttempts: Int { 2 }

        /// Refuses an endpoint that is neither https nor http to a loopback address (unless the
        /// configuration allows insecure HTTP).
        public func validateEndpointSecurity(for endpoint: URL) throws {
            let plainHTTP = endpoint.scheme?.lowercased() == "http"
            guard endpoint.isSafeForSecrets || (plainHTTP && signIn.configuration.allowsInsecureHTTP) else {
                throw ResourceDiscoveryError.insecure(endpoint)
            }
        }

        /// The snapshot's header, unless its token has expired by the authenticator's clock.
        public func authorizationHeader(for endpoint: URL) -> String? {
            let now = signIn.configuration.clock.now
            return snapshot.withLock { snapshot in
                guard let current = snapshot else { return nil }
                if let expiresAt = current.expiresAt, expiresAt <= now { return nil }
                return current.header
            }
        }

        /// Refreshes the token ahead of expiry when a session exists, and updates the snapshot.
        /// Errors are swallowed, as the protocol asks: a challenge recovers.
        public func prepareAuthorization(for endpoint: URL, session: URLSession) async throws {
            guard let authenticator = try? await authenticator(),
                (try? await authenticator.currentCredential()) != nil
            else { return }
            var request = URLRequest(url: endpoint)
            guard (try? await authenticator.authenticate(&request)) != nil else { return }
            await remember(request, from: authenticator)
        }

        /// Signs in (no credential was sent), or hands the rejection to the engine: one shared
        /// refresh, or a step-up for `insufficient_scope` and RFC 9470 challenges.
        ///
        /// - Returns: `true` with a new header in the snapshot; `false` when the response is not
        ///   about the credential.
        public func handleChallenge(
            statusCode: Int,
            headers: [String: String],
            endpoint: URL,
            operationKey: String?,
            session: URLSession
        ) async throws -> Bool {
            let authenticator = try await authenticator()
            var request = URLRequest(url: endpoint)
            let sent = snapshot.withLock { $0?.header }
            if let sent { request.setValue(sent, forHTTPHeaderField: "Authorization") }
            guard
                let response = HTTPURLResponse(
                    url: endpoint, statusCode: statusCode, httpVersion: "HTTP/1.1", headerFields: headers)
            else { return false }
            let hasCredential = try await authenticator.currentCredential() != nil
            if sent == nil || !hasCredential {
                request.setValue(nil, forHTTPHeaderField: "Authorization")
                try await authenticator.authenticate(&request)  // the first sign-in
            } else if authenticator.isRejection(response, of: request) {
                request = try await authenticator.reauthenticate(afterRejectionOf: request)
            } else {
                return false
            }
            await remember(request, from: authenticator)
            return true
        }

        /// The authenticator, made once: discovery and registration run at the first need.
        public func authenticator() async throws -> OAuthAuthenticator {
            let task = authenticatorTask.withLock { task in
                if let task { return task }
                let signIn = self.signIn
                let made = Task { try await signIn.authenticator() }
                task = made
                return made
            }
            do {
                return try await task.value
            } catch {
                authenticatorTask.withLock { $0 = nil }  // a failed discovery is tried again next time
                throw error
            }
        }

        private func remember(_ request: URLRequest, from authenticator: OAuthAuthenticator) async {
            guard let header = request.value(forHTTPHeaderField: "Authorization") else { return }
            let expiresAt = try? await authenticator.currentCredential()?.expiresAt
            snapshot.withLock { $0 = Snapshot(header: header, expiresAt: expiresAt ?? nil) }
        }
    }
#endif
