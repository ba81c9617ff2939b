import AuthenticatedRequests
import Foundation
import OAuthFlows

/// An agent that asks Ada, on her phone, to approve a payment before it makes it: CIBA in poll
/// mode, with what she approves spelled out as authorization details (RFC 9396).
func askAdaToApproveAPayment(issuer: URL, secret: String) async throws -> OAuthAuthenticator {
    let metadata = try await AuthorizationServerMetadata.discover(
        issuer: issuer, document: .openIDConfiguration)
    let payment = AuthorizationDetail(
        type: "payment_initiation",
        fields: [
            "instructedAmount": .object(["currency": .string("EUR"), "amount": .string("120.00")]),
            "creditorName": .string("ACME"),
        ])
    let flow = try metadata.backchannelAuthenticationFlow(
        client: .clientSecretBasic(id: "payments-agent", secret: secret),
        request: BackchannelAuthenticationRequest(
            hint: .loginHint("ada@example.com"),
            bindingMessage: "Pay 120 EUR to ACME (4711)",
            authorizationDetails: [payment]),
        onRequest: { request in
            print("Waiting for Ada to approve \"\(request.bindingMessage ?? "")\" on her phone")
        })
    return OAuthAuthenticator(flow: flow)  // the first request waits for her decision
}

/// The same in ping mode: the provider notifies `notifications`, which the service's HTTP server
/// feeds (see `BackchannelNotifications`); the flow then fetches the tokens at once.
func askInPingMode(
    metadata: AuthorizationServerMetadata, notifications: BackchannelNotifications, secret: String
)
    throws -> BackchannelAuthenticationFlow
{
    try metadata.backchannelAuthenticationFlow(
        client: .clientSecretBasic(id: "payments-agent", secret: secret),
        request: BackchannelAuthenticationRequest(
            hint: .loginHint("ada@example.com"), scope: "openid payments"),
        deliveryMode: .ping(notifications))
}
