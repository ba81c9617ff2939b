import AuthenticatedRequests
import Foundation

/// The flow of a session a user signed in to earlier (in the browser, on a device, or with a
/// refresh token), as it comes back from a `TokenStore` in a new process:
/// it refreshes with the refresh token grant, and cannot sign in by itself.
///
/// Its ``storeKey`` is the one every user-delegated flow of the same client, endpoint and account
/// uses (``TokenEndpoint/storeKey(account:)``), so `OAuthAuthenticator.restore(tokenEndpoint:client:account:store:configuration:)`
/// finds what `CodeFlowManager` or ``DeviceAuthorizationFlow`` stored.
public struct StoredSessionFlow: OAuthFlow, CustomStringConvertible {
    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// The account the session belongs to; `nil` for apps with one.
    public let account: String?

    /// Creates the flow.
    public init(tokenEndpoint: URL, client: ClientAuthentication, account: String? = nil) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client)
        self.account = account
    }

    /// Client, endpoint and account: see ``TokenEndpoint/storeKey(account:)``.
    public var storeKey: String { endpoint.storeKey(account: account) }

    /// Throws `AuthenticationError.Code.missingCredential`: without a
    /// stored session, the user has to sign in.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        throw AuthenticationError(
            code: .missingCredential,
            message: "No session is stored for \(endpoint.client.clientID)"
                + (account.map { " (account \($0))" } ?? "") + "; sign in first."
        )
    }

    /// Refreshes with the refresh token grant; a token without a refresh token cannot be
    /// refreshed (`AuthenticationError.Code.missingCredential`).
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        try await endpoint.refresh(token, context: context)
    }

    /// The client, endpoint and account.
    public var description: String {
        "StoredSessionFlow(\(endpoint.client), tokenEndpoint: \(endpoint.url.redactedForDisplay)"
            + (account.map { ", account: \($0)" } ?? "") + ")"
    }
}
