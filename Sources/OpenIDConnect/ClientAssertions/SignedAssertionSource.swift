import AuthenticatedRequests
import Foundation
import OAuthFlows

extension AssertionSource {
    /// An assertion the client signs with its private key for every grant (RFC 7523 §2.1, §3):
    /// `iss` is `issuer`, `sub` the principal the token is for, `aud` what the signer's
    /// ``PrivateKeyJWT/audience`` names (`tokenEndpoint` itself for ``ClientAssertionAudience/authorizationServer``
    /// and ``ClientAssertionAudience/endpoint``; RFC 10070's type applies to client assertions only),
    /// `iat` now and `exp` the signer's ``PrivateKeyJWT/lifetime`` later by the grant's clock,
    /// and a random `jti`. The server verifies it with the public key registered for `issuer`.
    ///
    /// ```swift
    /// let flow = JWTBearerFlow(
    ///     tokenEndpoint: tokenURL, client: .none(id: "reports-agent"),
    ///     assertion: .signed(
    ///         by: PrivateKeyJWT(key: try ES256PrivateKey(pem: pem), keyID: "2026-11"),
    ///         issuer: "reports-agent", subject: "alice@example.com", tokenEndpoint: tokenURL))
    /// ```
    ///
    /// - Parameters:
    ///   - signer: The client's key, its `kid`, the audience rule and the lifetime.
    ///   - issuer: Who issues the assertion: usually the client's id.
    ///   - subject: The principal the token is for: a user, or the client itself.
    ///   - tokenEndpoint: Where the grant is sent.
    public static func signed(by signer: PrivateKeyJWT, issuer: String, subject: String, tokenEndpoint: URL)
        -> AssertionSource
    {
        AssertionSource(name: "an assertion signed by \(issuer)'s key \(signer.keyID ?? "(no kid)")") { context in
            let (keys, kid) = await signer.keyCollection()
            return try await ClientAssertionClaims.sign(
                issuer: issuer, subject: subject, audience: signer.audience.grantValue(for: tokenEndpoint),
                lifetime: signer.lifetime, now: context.clock.now, keys: keys, kid: kid)
        }
    }
}
