import Crypto
import Foundation

/// One DPoP proof (RFC 9449 §4.2): a JWS with `typ` `dpop+jwt`, the key's `alg` and public
/// `jwk` in its header, and the request it proves in its claims.
struct DPoPProof {
    /// A key ready to sign proofs: the key, its thumbprint and its encoded header.
    struct SigningKey: Sendable {
        let key: any DPoPKey
        /// RFC 7638 thumbprint.
        let thumbprint: String
        /// `BASE64URL(header)`, the same for every proof of this key.
        let encodedHeader: String

        init(_ key: any DPoPKey) {
            self.key = key
            self.thumbprint = JWKThumbprint.sha256(of: key.publicJWK)
            let jwk = key.publicJWK.keys.sorted().map {
                JSONText.string($0) + ":" + JSONText.string(key.publicJWK[$0] ?? "")
            }
            let header =
                #"{"typ":"dpop+jwt","alg":"# + JSONText.string(key.algorithm) + #","jwk":{"#
                + jwk.joined(separator: ",") + "}}"
            self.encodedHeader = Base64URL.encode(Data(header.utf8))
        }
    }

    /// `htu`: the request's URI without query and fragment (§4.2), scheme and host in lowercase.
    static func targetURI(of url: URL) throws -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = components.percentEncodedHost, !host.isEmpty
        else {
            throw DPoPError(.invalidRequest, "A DPoP proof needs an http or https URL.")
        }
        components.scheme = scheme
        components.percentEncodedHost = host.lowercased()
        components.query = nil
        components.fragment = nil
        components.user = nil
        components.password = nil
        if components.percentEncodedPath.isEmpty { components.percentEncodedPath = "/" }
        guard let uri = components.string else {
            throw DPoPError(.invalidRequest, "The request's URL has no target URI.")
        }
        return uri
    }

    /// `ath`: BASE64URL(SHA-256(ASCII(access token))) (§4.2).
    static func accessTokenHash(_ accessToken: String) -> String {
        Base64URL.encode(SHA256.hash(data: Data(accessToken.utf8)))
    }

    /// A `jti` of 128 bits from the system CSPRNG.
    static func makeIdentifier() -> String {
        var generator = SystemRandomNumberGenerator()
        let words = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeBytes(of: words) { Base64URL.encode($0) }
    }

    /// The signed proof for a request with `method` to `url` at `issuedAt`.
    static func make(
        key: SigningKey,
        method: String,
        url: URL,
        issuedAt: Date,
        accessToken: String?,
        nonce: String?
    ) throws -> String {
        var claims =
            #"{"jti":"# + JSONText.string(makeIdentifier()) + #","htm":"# + JSONText.string(method) + #","htu":"#
            + JSONText.string(try targetURI(of: url)) + #","iat":"#
            + String(Int(issuedAt.timeIntervalSince1970.rounded(.down)))
        if let accessToken { claims += #","ath":"# + JSONText.string(accessTokenHash(accessToken)) }
        if let nonce { claims += #","nonce":"# + JSONText.string(nonce) }
        claims += "}"
        let signingInput = key.encodedHeader + "." + Base64URL.encode(Data(claims.utf8))
        let signature: Data
        do {
            signature = try key.key.sign(Data(signingInput.utf8))
        } catch {
            throw DPoPError(.signingFailed, "The DPoP key failed to sign a proof.", underlyingError: error)
        }
        return signingInput + "." + Base64URL.encode(signature)
    }
}
