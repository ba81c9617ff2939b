import AuthenticatedRequests
import Foundation

/// Signs JWT-secured authorization requests (RFC 9101, JAR): the request's parameters as the claims
/// of a JWS that the server can trust came from the client, sent by value (`request`) or pushed
/// (RFC 9126).
///
/// The `OpenIDConnect` module's `PrivateKeyJWT` is one: the key that signs the client's
/// assertions signs its request objects too.
public protocol RequestObjectSigner: Sendable {
    /// The JWS `alg` of the request objects (e.g. `ES256`, `PS256`), checked against the
    /// server's `request_object_signing_alg_values_supported` before anything is sent.
    var requestObjectAlgorithm: String { get }

    /// A request object for `clientID` and the server `audience` (its issuer): `parameters` as
    /// claims, with `iss` the client, `aud`, `iat`, `nbf`, a short `exp` and a fresh `jti`, in a
    /// JWS whose `typ` is `oauth-authz-req+jwt` (RFC 9101 §10.8).
    func requestObject(clientID: String, audience: String, parameters: [String: JSONValue]) async throws -> String
}
