import AuthenticatedRequests
import Foundation
import OAuthFlows

extension IdentityAssertionGrant {
    /// The grant at the provider of `openID`, for the user signed in to `session` with it: the
    /// provider's token endpoint, the same client, and the session's ID token as the subject
    /// (refreshed at the provider first when it has expired).
    ///
    /// ```swift
    /// let enterprise = try IdentityAssertionGrant(openID: oidc, session: enterpriseSession)
    /// ```
    ///
    /// - Parameters:
    ///   - openID: The client at the enterprise's OpenID provider.
    ///   - session: The authenticator that keeps the user's session there (see
    ///     ``OpenIDClient/signIn(redirectURI:scope:request:userAgent:configuring:account:resources:pushesAuthorizationRequests:parametersRepeatedInBrowser:authorizationDetails:requestObjectSigner:signedAuthorizationResponses:signedResponseMode:allowsStepUp:)``
    ///     and ``OpenIDClient/restore(store:account:configuration:)``).
    /// - Throws: `TokenEndpointError` when the provider's token endpoint is not https (or http to
    ///   a loopback address).
    public init(openID: OpenIDClient, session: OAuthAuthenticator) throws {
        self.init(
            tokenEndpoint: try openID.provider.metadata.tokenEndpoint(client: openID.client).url,
            client: openID.client, subject: .idToken(of: session))
    }
}
