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
    /// discovery, client registration, PKCE S256, `resource` on every request, RFC 9207 `iss`
    /// checked), one refresh serves every concurrent MCP request, the refresh token survives the
    /// access token's expiry and a server that does not rotate it, and the session lives in any
    /// `TokenStore`, so the next launch restores it without a browser.
    ///
    /// ```swift
    /// let authorizer = MCPAuthorizer(signIn: ResourceSignIn(
    ///     resource: serverURL, registration: .dynamic(clientName: "My Agent"),
    ///     method: .browser(LoopbackUserAgent()), store: FileTokenStore(directory: tokensFolder)))
    /// let transport = authorizer.makeTransport()  // the authorizer, DPoP proofs, a guarded session
    /// ```
    ///
    /// ``makeTransport(streaming:sseInitializationTimeout:protocolVersion:)`` is the one way to
    /// wire it: the authorizer is not itself an `HTTPClientAuthorizer`, so it cannot be handed to
    /// an `HTTPClientTransport` whose `URLSession` lacks the redirect guard (a same-origin `307`
    /// to a path outside the MCP endpoint would carry the token there).
    ///
    /// - The transport asks for the `Authorization` header synchronously; the authorizer answers
    ///   from a snapshot that `prepareAuthorization(for:session:)` (before every request) and
    ///   `handleChallenge(statusCode:headers:endpoint:operationKey:session:)` (after a `401` or
    ///   `403`) keep current, and never with a token that has expired by the configuration's clock.
    /// - With DPoP (`configuration.proofOfPossession`), `modify(_:)`, given to the transport as
    ///   its `requestModifier`, adds a fresh proof for the request's method and URL to every
    ///   request (the POSTs and the GET event stream), signed with the session's loaded key: no
    ///   I/O. A `use_dpop_nonce` challenge is answered once with the server's nonce.
    /// - A `403` (or `401`) step-up challenge (`insufficient_scope`, RFC 9470) is answered by one
    ///   re-authorization for the union of scopes; the same challenge to the same MCP operation
    ///   after that ends with `StepUpError` (`refusedAfterStepUp`): no loop.
    /// - A `401` for a token the server no longer accepts is first checked against the resource's
    ///   metadata: when it names another authorization server now, the client registers and
    ///   signs in there and never sends the old server's credentials to the new one.
    ///
    /// Thread safety: every mutable property is behind a lock (`Locked`), so the class is
    /// `Sendable` without `@unchecked`.
    public final class MCPAuthorizer: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
        CustomReflectable
    {
        /// How the MCP server is signed in to.
        public let signIn: ResourceSignIn

        /// What the synchronous calls answer from: the header and the token it carries.
        private struct Snapshot {
            var header: String
            var token: OAuthToken
        }

        /// The authenticator of the authorization server the resource names now.
        private struct Session {
            var authenticator: OAuthAuthenticator
            var issuer: String
        }

        private let snapshot = Locked<Snapshot?>(nil)
        private let sessionTask = Locked<Task<Session, any Error>?>(nil)
        /// The step-ups answered, per MCP operation: each operation steps up once per requirement.
        private struct StepUp: Hashable {
            var operation: String?
            var requirement: StepUpRequirement
        }

        private let steppedUp = Locked<Set<StepUp>>([])
        private let lastFailure = Locked<(any Error)?>(nil)

        /// The URLs the session's tokens may go to: the MCP server's.
        private let boundary: ResourceBoundary

        /// Creates an authorizer for the MCP server `signIn` names.
        public init(signIn: ResourceSignIn) {
            self.signIn = signIn
            self.boundary = ResourceBoundary(signIn.resource)
        }

        /// `3`: for one request, a DPoP nonce, a sign-in or refresh, and a step-up at most.
        package var maxAuthorizationAttempts: Int { 3 }

        /// Refuses an endpoint that is neither https nor http to a loopback address (unless the
        /// configuration allows insecure HTTP).
        package func validateEndpointSecurity(for endpoint: URL) throws {
            let plainHTTP = endpoint.scheme?.lowercased() == "http"
            guard endpoint.isSafeForSecrets || (plainHTTP && signIn.configuration.allowsInsecureHTTP) else {
                throw ResourceDiscoveryError.insecure(endpoint)
            }
        }

        /// The snapshot's header, unless its token has expired by the configuration's clock or
        /// `endpoint` is outside the MCP server signed in to (its origin, its path and below:
        /// `ResourceSignInFlow.resourceBoundary`), which gets no header at all. Takes a lock and
        /// reads the clock; nothing else.
        package func authorizationHeader(for endpoint: URL) -> String? {
            guard boundary.contains(endpoint) else { return nil }
            let now = signIn.configuration.clock.now
            return snapshot.withLock { snapshot in
                guard let current = snapshot else { return nil }
                if let expiresAt = current.token.expiresAt, expiresAt <= now { return nil }
                return current.header
            }
        }

        /// The transport's `requestModifier`: adds a DPoP proof for the request's method and URL
        /// when the header the transport set carries a DPoP-bound token. Signs with the loaded
        /// key; no I/O. When no proof can be made now, the bound token is taken off the request
        /// (it is worthless without its proof), and the server's `401` signs in again.
        package func modify(_ request: URLRequest) -> URLRequest {
            guard let proof = signIn.configuration.proofOfPossession,
                let sent = request.value(forHTTPHeaderField: "Authorization"),
                let current = snapshot.withLock({ $0 }), current.header == sent,
                let key = current.token.boundKey
            else { return request }
            var proved = request
            if (try? proof.proveImmediately(&proved, with: key, accessToken: current.token.accessToken)) == true {
                return proved
            }
            proved.setValue(nil, forHTTPHeaderField: "Authorization")
            return proved
        }

        /// Refreshes the token ahead of expiry when a session exists, and updates the snapshot. A
        /// snapshot that needs no refresh returns at once. Before the first challenge there is no
        /// session: nothing is discovered here, since discovery reads the challenge the server
        /// actually sends (`handleChallenge(statusCode:headers:endpoint:operationKey:session:)`),
        /// and a stored session is restored there. Errors are swallowed, as the protocol asks: a
        /// challenge recovers.
        package func prepareAuthorization(for endpoint: URL, session: URLSession) async throws {
            let configuration = signIn.configuration
            let fresh = snapshot.withLock { current in
                current.map { !$0.token.requiresRefresh(now: configuration.clock.now, leeway: configuration.leeway) }
            }
            if fresh == true || !boundary.contains(endpoint) { return }
            guard sessionTask.withLock({ $0 != nil }), let authenticator = try? await self.session().authenticator,
                (try? await authenticator.currentCredential()) != nil
            else { return }
            var request = URLRequest(url: endpoint)
            guard (try? await authenticator.authenticate(&request)) != nil else { return }
            await remember(request, from: authenticator)
        }

        /// Answers a `401` or `403`: signs in (no credential was sent), resends with a DPoP
        /// nonce, follows a migration to another authorization server, or hands the rejection to
        /// the engine: one shared refresh, or one step-up for `insufficient_scope` and RFC 9470
        /// challenges.
        ///
        /// The first challenge is what discovery reads: its `resource_metadata` (where the MCP
        /// server's metadata is) and its `scope` (asked for first), as the MCP authorization
        /// specification requires; no request of its own is sent to the MCP server. A session
        /// stored by an earlier launch is restored then, without a sign-in.
        ///
        /// - Returns: `true` with a new header in the snapshot; `false` when the response is not
        ///   about the credential.
        /// - Throws: `StepUpError` (`refusedAfterStepUp`) for a step-up challenge that was already
        ///   answered; what the sign-in or refresh throws.
        package func handleChallenge(
            statusCode: Int,
            headers: [String: String],
            endpoint: URL,
            operationKey: String?,
            session: URLSession
        ) async throws -> Bool {
            do {
                return try await answer(
                    statusCode: statusCode, headers: headers, endpoint: endpoint, operationKey: operationKey)
            } catch {
                let failure = Self.stepError(error)
                lastFailure.withLock { $0 = failure }
                throw failure
            }
        }

        /// The error of the last challenge that could not be answered, with all its detail: the
        /// MCP SDK's transport passes on only its text. `nil` until one fails. It is the error of
        /// the step that failed, not a wrapper:
        /// - `CodeFlowError`: the browser sign-in was refused, abandoned or timed out;
        /// - `OAuthError`: the authorization server refused a request (the code exchange, the
        ///   client credentials grant, a registration), with its `error_description`;
        /// - `ClientRegistrationError`, `ResourceDiscoveryError`, `TokenEndpointError`: the client
        ///   refused what a server sent;
        /// - `StepUpError`: a step-up was refused or needs the user;
        /// - `AuthenticationError`: the engine's own outcomes (a refresh that failed or was
        ///   rejected, too many refreshes, a URL outside the MCP server).
        public var lastError: (any Error)? { lastFailure.withLock { $0 } }

        /// `error`, or for a first sign-in that failed (`AuthenticationError` `obtainFailed`), the
        /// error of the step that failed.
        static func stepError(_ error: any Error) -> any Error {
            guard let wrapped = error as? AuthenticationError, wrapped.code == .obtainFailed,
                let underlying = wrapped.underlyingError
            else { return error }
            return underlying
        }

        private func answer(statusCode: Int, headers: [String: String], endpoint: URL, operationKey: String?)
            async throws -> Bool
        {
            guard boundary.contains(endpoint) else {
                throw AuthenticationError(
                    code: .foreignResource,
                    message: "\(endpoint.redactedForDisplay) is not the MCP server this authorizer signed in to "
                        + "(\(boundary)); no credential is sent there.")
            }
            let challenges = AuthenticationChallenge.parse(
                headers.first { $0.key.caseInsensitiveCompare("WWW-Authenticate") == .orderedSame }?.value ?? "")
            let current = try await self.session(challenges: challenges)
            let authenticator = current.authenticator
            // The request as the transport sent it: the snapshot's header and, with DPoP, a proof.
            var request = URLRequest(url: endpoint)
            request.httpMethod = "POST"
            let sent = snapshot.withLock { $0?.header }
            if let sent {
                request.setValue(sent, forHTTPHeaderField: "Authorization")
                request = modify(request)
            }
            let response = ResponseHead(statusCode: statusCode, url: endpoint, headerFields: HeaderFields(headers))
            if sent != nil, let resent = try await authenticator.resendableRequest(request, after: response) {
                await remember(resent, from: authenticator)  // a DPoP nonce: not a refresh
                return true
            }
            let hasCredential = try await authenticator.currentCredential() != nil
            if sent == nil || !hasCredential {
                request.setValue(nil, forHTTPHeaderField: "Authorization")
                try await authenticator.authenticate(&request)  // the first sign-in, or a restored session
                await remember(request, from: authenticator)
                return true
            }
            if let requirement = StepUpRequirement(response: response) {
                let answered = steppedUp.withLock { done in
                    if done.count >= 256 { done.removeAll() }  // bounded; operations are short-lived
                    return !done.insert(StepUp(operation: operationKey, requirement: requirement)).inserted
                }
                if answered { throw StepUpError(.refusedAfterStepUp, requirement: requirement, url: endpoint) }
            } else if statusCode == 401, let migrated = await migrated(from: current, challenges: challenges) {
                var first = URLRequest(url: endpoint)
                try await migrated.authenticator.authenticate(&first)
                await remember(first, from: migrated.authenticator)
                return true
            }
            guard authenticator.isRejection(response, of: request) else { return false }
            request = try await authenticator.reauthenticate(afterRejectionOf: request)
            await remember(request, from: authenticator)
            return true
        }

        /// The authenticator, made once: discovery and registration run at the first need. Made
        /// here before any challenge, discovery asks the MCP server for one with a request of its
        /// own.
        public func authenticator() async throws -> OAuthAuthenticator {
            try await session().authenticator
        }

        /// The session, made once: from `challenges` (the server's first challenge) when given,
        /// else from a probe of the MCP server.
        private func session(challenges: [AuthenticationChallenge]? = nil) async throws -> Session {
            let task = sessionTask.withLock { task in
                if let task { return task }
                let signIn = self.signIn
                let made = Task { try await Self.makeSession(signIn, challenges: challenges) }
                task = made
                return made
            }
            do {
                return try await task.value
            } catch {
                sessionTask.withLock { $0 = nil }  // a failed discovery is tried again next time
                throw error
            }
        }

        private static func makeSession(_ signIn: ResourceSignIn, challenges: [AuthenticationChallenge]?)
            async throws -> Session
        {
            let flow = try await signIn.flow(challenges: challenges)
            return Session(
                authenticator: OAuthAuthenticator(flow: flow, store: signIn.store, configuration: signIn.configuration),
                issuer: flow.serverMetadata.issuer)
        }

        /// A session at the authorization server the resource's metadata names now, when that is
        /// not `current`'s (the resource moved to another server); `nil` otherwise, or when the
        /// metadata cannot be read.
        private func migrated(from current: Session, challenges: [AuthenticationChallenge]) async -> Session? {
            guard let fresh = try? await Self.makeSession(signIn, challenges: challenges),
                fresh.issuer != current.issuer
            else { return nil }
            sessionTask.withLock { $0 = Task { fresh } }
            snapshot.withLock { $0 = nil }
            return fresh
        }

        /// `MCPAuthorizer(<MCP server>, signed in: yes)`: no header, token or registration secret.
        public var description: String {
            let signedIn = snapshot.withLock { $0 != nil }
            return "MCPAuthorizer(\(signIn.resource.redactedForDisplay), signed in: \(signedIn ? "yes" : "no"))"
        }

        /// Same as ``description``.
        public var debugDescription: String { description }

        /// A mirror showing only ``description``: `dump` and debuggers see no header or token.
        public var customMirror: Mirror { Mirror(self, children: ["description": description]) }

        private func remember(_ request: URLRequest, from authenticator: OAuthAuthenticator) async {
            guard let header = request.value(forHTTPHeaderField: "Authorization"),
                let token = try? await authenticator.currentCredential()
            else { return }
            snapshot.withLock { $0 = Snapshot(header: header, token: token) }
        }
    }
#endif
