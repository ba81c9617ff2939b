import AuthenticatedRequests
import Foundation

extension AuthenticationInterceptor where A == BearerTokenAuthenticator {
    /// Brings back the session a user signed in to earlier, in the browser, on a device or with a
    /// refresh token, from `store`: one call in a new process.
    ///
    /// ```swift
    /// guard let authenticator = try await OAuthAuthenticator.restore(
    ///     tokenEndpoint: tokenURL, client: .none(id: "my-cli"), store: FileTokenStore(directory: folder))
    /// else { /* no session: sign in */ }
    /// let me = try await Me(authenticator: authenticator).request()  // refreshed if it expired
    /// ```
    ///
    /// A valid stored token is used as it is (no token request); an expired one is refreshed once,
    /// coordinated with other processes that share the store.
    ///
    /// - Returns: the authenticator, or `nil` when no session is stored for this client and
    ///   account (sign in then: `CodeFlowManager`, or `configure(with:token:)` with a device or
    ///   refresh-token flow, stores the new session under the same key).
    /// - Throws: `AuthenticationError` with code `storeFailed` when the
    ///   stored entry cannot be read.
    public static func restore(
        tokenEndpoint: URL,
        client: ClientAuthentication,
        account: String? = nil,
        store: any TokenStore,
        configuration: Configuration = Configuration()
    ) async throws -> OAuthAuthenticator? {
        try await restore(
            flow: StoredSessionFlow(tokenEndpoint: tokenEndpoint, client: client, account: account),
            store: store,
            configuration: configuration
        )
    }

    /// ``restore(tokenEndpoint:client:account:store:configuration:)`` with the token endpoint of
    /// discovered metadata.
    public static func restore(
        metadata: AuthorizationServerMetadata,
        client: ClientAuthentication,
        account: String? = nil,
        store: any TokenStore,
        configuration: Configuration = Configuration()
    ) async throws -> OAuthAuthenticator? {
        try await restore(
            tokenEndpoint: try metadata.tokenEndpoint(client: client).url,
            client: client,
            account: account,
            store: store,
            configuration: configuration
        )
    }

    /// Brings back the session that `flow` stored in `store`: for flows that can run again on
    /// their own (client credentials, an extension grant), or any other.
    ///
    /// - Returns: the authenticator, or `nil` when `store` holds nothing under the flow's
    ///   `OAuthFlow.storeKey`.
    public static func restore(
        flow: any OAuthFlow,
        store: any TokenStore,
        configuration: Configuration = Configuration()
    ) async throws -> OAuthAuthenticator? {
        let authenticator = OAuthAuthenticator(flow: flow, store: store, configuration: configuration)
        return try await authenticator.currentCredential() == nil ? nil : authenticator
    }

    /// Whether the session can go on without the user, judged locally (no request): there is a
    /// credential, and its access token is still valid or it has a refresh token and a flow to
    /// use it. `false` means: sign in. (A server may still refuse the refresh token; that
    /// surfaces as `AuthenticationError.Code.reauthenticationRequired` on the next request.)
    public func canRenew() async -> Bool {
        guard let token = try? await currentCredential() else { return false }
        let valid = !token.requiresRefresh(now: configuration.clock.now, leeway: 0)
        return valid || (token.refreshToken != nil && isConfigured)
    }

    /// Switches this authenticator to the session stored for `client` at `tokenEndpoint` (and
    /// `account`), and says whether there is one.
    @discardableResult
    public func restoreSession(
        tokenEndpoint: URL,
        client: ClientAuthentication,
        account: String? = nil
    ) async throws -> Bool {
        await configure(with: StoredSessionFlow(tokenEndpoint: tokenEndpoint, client: client, account: account))
        return try await currentCredential() != nil
    }
}
