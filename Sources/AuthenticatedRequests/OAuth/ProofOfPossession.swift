import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Proof of possession of the key that tokens are bound to: DPoP (RFC 9449), implemented by the
/// `DPoP` module's `DPoPProver`.
///
/// Give one to ``AuthenticationInterceptor/Configuration/proofOfPossession``: every token
/// request then carries a proof signed with the session's key, tokens of ``tokenType`` come back
/// bound to that key (``OAuthToken/boundKey``), and every request with such a token carries
/// `Authorization: <tokenType> <token>` and a fresh proof. Bearer tokens are not affected.
public protocol ProofOfPossession: Sendable {
    /// The token type of bound tokens, `DPoP`; compared ignoring case.
    var tokenType: String { get }

    /// The key a token request signs with: the one `token` is bound to (a refresh keeps its key),
    /// or a key for a new session when `token` is `nil` or unbound.
    ///
    /// - Throws: when the key of `token` cannot be loaded any more; the token is then not used.
    func key(for token: OAuthToken?) async throws -> BoundKey

    /// Adds a proof for `request` signed with `key`: for a token request `accessToken` is `nil`,
    /// for a request to a resource it is the token whose hash the proof carries.
    func prove(_ request: inout URLRequest, with key: BoundKey, accessToken: String?) async throws

    /// Reads what a server answered to a proved request: remembers a nonce it sent for later
    /// proofs, and returns `true` when it asks for the request once more with that nonce (`error`
    /// is the OAuth error of the body or of the `WWW-Authenticate` challenge, if any).
    func didReceive(_ response: ResponseHead, error: OAuthErrorCode?, for request: URLRequest) -> Bool
    /// Adds a proof for `request` now, without waiting: for callers that must set headers
    /// synchronously (an HTTP client's request hook). It may only use a key that
    /// ``prove(_:with:accessToken:)`` has already loaded, and does no I/O.
    ///
    /// - Returns: `false` when it cannot prove now (the key is not loaded yet): send the request
    ///   without the token, or prove it the asynchronous way. The default always returns `false`.
    func proveImmediately(_ request: inout URLRequest, with key: BoundKey, accessToken: String?) throws -> Bool
}

extension ProofOfPossession {
    /// `false`: this proof can only be made asynchronously.
    public func proveImmediately(_ request: inout URLRequest, with key: BoundKey, accessToken: String?) throws
        -> Bool
    { false }
}

extension OAuthToken {
    /// Whether the token is bound to a key by `proof` (its type is `proof`'s, ignoring case).
    package func isBound(by proof: (any ProofOfPossession)?) -> Bool {
        guard let proof else { return tokenType.isEqualIgnoringASCIICase(to: "DPoP") }
        return tokenType.isEqualIgnoringASCIICase(to: proof.tokenType)
    }
}
