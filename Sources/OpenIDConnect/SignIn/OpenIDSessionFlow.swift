import AuthenticatedRequests
import Foundation
import OAuthFlows

/// The flow of a session signed in with OpenID Connect: it refreshes with the refresh token
/// grant, validates a refreshed ID token against the session's (Core §12.2), and keeps the
/// session's ID token when the refresh response has none, so the claims stay with the
/// credential in the store.
public struct OpenIDSessionFlow: OAuthFlow, CustomStringConvertible {
    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// The account the session belongs to.
    public let account: String?
    /// Validates refreshed ID tokens.
    public let validator: IDTokenValidator

    /// Creates the flow.
    ///
    /// - Parameters:
    ///   - tokenEndpoint: The provider's token endpoint.
    ///   - client: The client and how it authenticates.
    ///   - account: The account the session belongs to, for apps with several.
    ///   - validator: Validates refreshed ID tokens.
    ///   - resources: RFC 8707 resource indicators sent with every refresh (those the session was
    ///     signed in for).
    public init(
        tokenEndpoint: URL, client: ClientAuthentication, account: String? = nil, validator: IDTokenValidator,
        resources: [URL] = []
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client, resources: resources)
        self.account = account
        self.validator = validator
    }

    /// The key every user-delegated flow of this client uses (`TokenEndpoint.storeKey(account:)`).
    public var storeKey: String { endpoint.storeKey(account: account) }

    /// Throws `AuthenticationError` `.missingCredential`: the user signs in through
    /// ``OpenIDClient/signIn(redirectURI:scope:request:userAgent:configuring:account:resources:pushesAuthorizationRequests:parametersRepeatedInBrowser:)``.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        throw AuthenticationError(
            code: .missingCredential,
            message: "No OpenID Connect session is stored for \(endpoint.client.clientID); sign in first.")
    }

    /// Refreshes, then validates the new ID token against the previous one or keeps the previous.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        var refreshed = try await endpoint.refresh(token, context: context)
        let previous = token.idTokenClaims
        if let idToken = refreshed.idToken {
            _ = try await validator.validate(
                idToken,
                expecting: IDTokenExpectations(accessToken: refreshed.accessToken, previous: previous),
                now: context.clock.now)
        } else {
            refreshed.idToken = token.idToken
        }
        return refreshed
    }

    /// The client, endpoint and account.
    public var description: String {
        "OpenIDSessionFlow(\(endpoint.client), tokenEndpoint: \(endpoint.url.redactedForDisplay)"
            + (account.map { ", account: \($0)" } ?? "") + ")"
    }
}
