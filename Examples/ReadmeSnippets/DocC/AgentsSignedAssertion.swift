import AuthenticatedRequests
import Foundation
import JWTKit
import OAuthFlows
import OpenIDConnect

/// An agent that signs its own assertion for the user it acts for (RFC 7523 §2.1), with a key
/// whose public half the authorization server holds for the issuer `reports-agent`.
func agentFlow(tokenEndpoint: URL, pem: String, user: String) throws -> JWTBearerFlow {
    JWTBearerFlow(
        tokenEndpoint: tokenEndpoint,
        client: .unidentified,  // the signed assertion names the agent
        assertion: .signed(
            by: PrivateKeyJWT(key: try ES256PrivateKey(pem: pem), keyID: "2026-11"),
            issuer: "reports-agent", subject: user, tokenEndpoint: tokenEndpoint))
}
