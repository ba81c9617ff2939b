import AuthenticatedRequests
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
        /// The last access token's `ath`: a session proves many requests with one token.
        private let lastHash = Locked<(token: String, hash: String)?>(nil)

        /// `ath` of `accessToken`, computed once per token.
        func accessTokenHash(_ accessToken: String) -> String {
            if let last = lastHash.withLock({ $0 }), last.token == accessToken { return last.hash }
            let hash = DPoPProof.accessTokenHash(accessToken)
            lastHash.withLock { $0 = (accessToken, hash) }
            return hash
        }

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
        try ProofTarget(url).uri
    }

    /// `ath`: BASE64URL(SHA-256(ASCII(access token))) (§4.2).
    static func accessTokenHash(_ accessToken: String) -> String {
        Base64URL.encode(SHA256.hash(data: Data(accessToken.utf8)))
    }

    /// A `jti` of 128 bits from swift-crypto's CSPRNG (BoringSSL's, seeded by the system's, on
    /// Linux; the system's on Apple platforms): one draw, where the standard library's generator
    /// makes a system call for every 64 bits.
    static func makeIdentifier() -> String {
        SymmetricKey(size: .bits128).withUnsafeBytes { Base64URL.encode($0) }
    }

    /// The signed proof for a request with `method` to `target` at `issuedAt`.
    static func make(
        key: SigningKey,
        method: String,
        target: ProofTarget,
        issuedAt: Date,
        accessToken: String?,
        nonce: String?
    ) throws -> String {
        var claims = #"{"jti":"#
        claims.reserveCapacity(256)
        claims += JSONText.string(makeIdentifier())
        claims += #","htm":"#
        claims += JSONText.string(method)
        claims += #","htu":"#
        claims += JSONText.string(target.uri)
        claims += #","iat":"#
        claims += String(Int(issuedAt.timeIntervalSince1970.rounded(.down)))
        if let accessToken { claims += #","ath":"# + JSONText.string(key.accessTokenHash(accessToken)) }
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

/// Where a proof goes: its `htu` and the origin its nonces belong to, read from the URL's text in
/// one pass (URLComponents costs more than the rest of a proof on Linux).
struct ProofTarget: Sendable {
    /// `scheme://authority/path`: lowercase scheme and authority, no user info, no query or
    /// fragment, `/` for an empty path.
    let uri: String
    /// `scheme://host:port` with the default port written out: the key of the origin's nonces.
    let origin: String

    /// The URL's text, as read.
    let urlText: String

    init(_ url: URL) throws {
        try self.init(urlText: url.absoluteString)
    }

    /// The target of the URL written `urlText`.
    init(urlText: String) throws {
        self.urlText = urlText
        let text = Array(urlText.utf8)
        guard let colon = text.firstIndex(of: UInt8(ascii: ":")), text.count > colon + 2,
            text[colon + 1] == UInt8(ascii: "/"), text[colon + 2] == UInt8(ascii: "/")
        else {
            throw DPoPError(.invalidRequest, "A DPoP proof needs an http or https URL.")
        }
        let scheme = String(decoding: text[..<colon], as: UTF8.self).lowercased()
        guard scheme == "https" || scheme == "http" else {
            throw DPoPError(.invalidRequest, "A DPoP proof needs an http or https URL.")
        }
        let authorityStart = colon + 3
        let isDelimiter = { (byte: UInt8) in
            byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
        }
        let authorityEnd = text[authorityStart...].firstIndex(where: isDelimiter) ?? text.endIndex
        var hostStart = authorityStart
        if let at = text[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) { hostStart = at + 1 }
        let authority = String(decoding: text[hostStart..<authorityEnd], as: UTF8.self).lowercased()
        guard !authority.isEmpty else {
            throw DPoPError(.invalidRequest, "A DPoP proof needs a URL with a host.")
        }
        let pathEnd =
            text[authorityEnd...].firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? text.endIndex
        let path = authorityEnd == pathEnd ? "/" : String(decoding: text[authorityEnd..<pathEnd], as: UTF8.self)
        uri = scheme + "://" + authority + path
        // The port is what follows the last colon after the host (an IPv6 host is in brackets).
        let hasPort = authority.last(where: { $0 == ":" || $0 == "]" }) == ":"
        origin = scheme + "://" + authority + (hasPort ? "" : (scheme == "https" ? ":443" : ":80"))
    }
}
