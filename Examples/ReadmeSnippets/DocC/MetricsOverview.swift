#if Metrics
import AuthenticatedRequests
import AuthenticatedRequestsMetrics

/// Counts the authenticator's events in swift-metrics and traces its token requests; both are
/// no-ops until the application bootstraps a backend.
func observedAuthenticator(flow: any OAuthFlow, tokenEndpointTransport: any HTTPTransport)
    -> (OAuthAuthenticator, TracingTransport)
{
    let authenticator = OAuthAuthenticator(flow: flow)
    authenticator.recordMetrics()  // authreq_authentication_events_total{event, code}
    // Give this transport to the flow that sends token requests: one span per request.
    let traced = TracingTransport(tokenEndpointTransport)
    return (authenticator, traced)
}
#endif
