import AuthenticatedRequests
import Foundation
import OAuthFlows

/// A service that calls another on its user's behalf: the user's current access token is
/// exchanged (RFC 8693) for one for the other service; when the user's token is refreshed, the
/// next exchange presents the new one.
func onBehalfOf(user: OAuthAuthenticator, tokenEndpoint: URL, clientID: String, secret: String)
    -> OAuthAuthenticator
{
    let flow = TokenExchangeFlow(
        tokenEndpoint: tokenEndpoint,
        client: .clientSecretBasic(id: clientID, secret: secret),
        subject: .accessToken(of: user),
        requestedTokenType: .accessToken,
        audiences: ["https://calendar.example.com"])
    return OAuthAuthenticator(flow: flow)
}
