import Foundation

/// Signs the JWT a client authenticates with (RFC 7523 §2.2): `private_key_jwt` with a private
/// key, `client_secret_jwt` with an HMAC of the client secret.
///
/// A ``ClientAuthentication/assertion(id:signer:issuer:)`` client asks it for a fresh assertion for
/// every request, naming the endpoint the request goes to. The `OpenIDConnect` module has both
/// signers, on jwt-kit.
public protocol ClientAssertionSigner: Sendable {
    /// `private_key_jwt` or `client_secret_jwt`.
    var methodName: String { get }

    /// A signed assertion: `iss` and `sub` the client, `aud` the authorization server, a fresh
    /// `jti`, and a short lifetime. RFC 10070 (November 2026, updating RFC 7523) makes `issuer`,
    /// the server's issuer identifier, the one audience, and `client-authentication+jwt` the type;
    /// `endpoint` is where the request goes, the audience servers before it expected.
    func assertion(clientID: String, endpoint: URL, issuer: String?) async throws -> String
}

/// Constants of client assertions.
public enum ClientAssertion {
    /// `urn:ietf:params:oauth:client-assertion-type:jwt-bearer` (RFC 7523 §2.2).
    public static let jwtBearerType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    /// `client-authentication+jwt`: the `typ` of a client assertion (RFC 10070 §4).
    public static let jwtType = "client-authentication+jwt"
}
