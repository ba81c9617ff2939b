#if AsyncHTTPClient
import AsyncHTTPClientTransport
import AuthenticatedRequests

/// One transport for everything of this client: tokens, discovery and resources.
func serverAuthenticator(flow: any OAuthFlow) -> OAuthAuthenticator {
    OAuthAuthenticator(
        flow: flow,
        configuration: .init(tokenTransport: AsyncHTTPClientTransport()))
}
#endif
