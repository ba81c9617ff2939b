#if AsyncHTTPClient
import AsyncHTTPClientTransport
import AuthenticatedRequests
import Foundation
import OAuthFlows

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct Invoices: AuthenticatedResource {
    struct Invoice: Decodable { let id: String }
    typealias Output = [Invoice]
    let authenticator: any RequestAuthenticator

    func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(url: URL(string: "https://billing.example.com/invoices")!)
    }
}

/// One authenticator for the whole service: N concurrent requests share one token request.
func makeAuthenticator(clientSecret: String) -> OAuthAuthenticator {
    OAuthAuthenticator(
        flow: ClientCredentialsFlow(
            tokenEndpoint: URL(string: "https://auth.example.com/oauth/token")!,
            client: .clientSecretBasic(id: "billing-worker", secret: clientSecret),
            scope: "invoices:read"),
        configuration: .init(tokenTransport: AsyncHTTPClientTransport()))  // set once: tokens and API
}

func unpaidInvoices(using authenticator: OAuthAuthenticator) async throws -> [Invoices.Invoice] {
    try await Invoices(authenticator: authenticator).request()
}
#endif
