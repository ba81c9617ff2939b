import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import JWTKit
import OAuthFlows

/// The claims of a request object (RFC 9101 §4): the authorization request's parameters, then
/// `iss`, `aud`, `iat`, `nbf`, `exp` and `jti`.
struct RequestObjectClaims: JWTPayload {
    let claims: [String: JSONValue]

    func encode(to encoder: any Encoder) throws { try JSONValue.object(claims).encode(to: encoder) }

    init(claims: [String: JSONValue]) { self.claims = claims }

    init(from decoder: any Decoder) throws {
        claims = try JSONValue(from: decoder).objectValue ?? [:]
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

extension PrivateKeyJWT: RequestObjectSigner {
    /// The key's algorithm: `ES256`, `RS256`, `PS256` or `EdDSA`.
    public var requestObjectAlgorithm: String {
        switch key {
        case .ecdsa: "ES256"
        case .rsa(_, let pss): pss ? "PS256" : "RS256"
        case .eddsa: "EdDSA"
        }
    }

    /// A request object signed with the client's key (RFC 9101): valid for ``lifetime`` seconds.
    public func requestObject(clientID: String, audience: String, parameters: [String: JSONValue]) async throws
        -> String
    {
        let (keys, kid) = await keyCollection()
        let issued = Int(clock.now.timeIntervalSince1970)
        var claims = parameters
        claims["iss"] = .string(clientID)
        claims["aud"] = .string(audience)
        claims["iat"] = .number(Double(issued))
        claims["nbf"] = .number(Double(issued))
        claims["exp"] = .number(Double(issued + max(1, Int(lifetime))))
        claims["jti"] = .string(AuthorizationRequest.makeState())
        return try await keys.sign(
            RequestObjectClaims(claims: claims), kid: kid, header: ["typ": "oauth-authz-req+jwt"])
    }
}
