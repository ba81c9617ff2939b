import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// DPoP (RFC 9449): binds every token an `OAuthAuthenticator` obtains to a key, and proves
/// possession of the key on every token request and every request to a resource.
///
/// ```swift
/// let authenticator = OAuthAuthenticator(
///     flow: flow, store: store,
///     configuration: .init(proofOfPossession: DPoPProver()))
/// ```
///
/// - Each session gets a new key from the ``keySource`` (P-256 in memory by default); the key is
///   stored with the token (`OAuthToken.boundKey`), so a restored session proves with the same
///   key, and a refresh uses the key of the token it refreshes.
/// - A token request carries a proof; a token of type `DPoP` comes back bound to the key. A
///   server without DPoP answers with a bearer token, which stays a bearer token.
/// - A request with a bound token carries `Authorization: DPoP <token>` and a fresh proof:
///   `htm`, `htu` without query and fragment, `iat`, a 128-bit `jti`, `ath`, and the origin's
///   latest nonce.
/// - Nonces are remembered per origin from every response that carries one. A `use_dpop_nonce`
///   answer (a token endpoint's `400`, a resource's `401` challenge) is answered by sending the
///   request once more with the new nonce; this is not a refresh, and there is no third try.
public final class DPoPProver: ProofOfPossession {
    /// Where keys come from.
    public let keySource: any DPoPKeySource
    /// The clock of the proofs' `iat`.
    public let clock: any WallClock
    /// `DPoP`.
    public var tokenType: String { "DPoP" }

    let nonces = DPoPNonces()
    /// Keys ready to sign, by thumbprint; bounded like the nonces.
    private let signingKeys = Locked<[String: DPoPProof.SigningKey]>([:])
    private static let keyCapacity = 256
    /// The target of the last request proved.
    private let lastTarget = Locked<ProofTarget?>(nil)

    /// Creates a prover.
    ///
    /// - Parameters:
    ///   - keySource: where keys come from; a new P-256 key per session unless given.
    ///   - clock: the clock of the proofs' `iat`.
    public init(keySource: any DPoPKeySource = SoftwareDPoPKeySource(), clock: any WallClock = SystemWallClock()) {
        self.keySource = keySource
        self.clock = clock
    }

    /// Creates a prover that binds every session to `key`, which the app supplies.
    public convenience init(key: any DPoPKey, clock: any WallClock = SystemWallClock()) {
        self.init(keySource: FixedDPoPKeySource(key: key), clock: clock)
    }

    /// The key `token` is bound to, loaded; or a new key from the ``keySource``.
    ///
    /// - Throws: ``DPoPError`` ``DPoPError/Code/keyUnavailable`` or ``DPoPError/Code/keyMismatch``
    ///   when the bound key cannot be loaded.
    public func key(for token: OAuthToken?) async throws -> BoundKey {
        if let bound = token?.boundKey {
            _ = try await signingKey(for: bound)
            return bound
        }
        let key: any DPoPKey
        do {
            key = try await keySource.makeKey()
        } catch let error as DPoPError {
            throw error
        } catch {
            throw DPoPError(.keyUnavailable, "The key source could not make a DPoP key.", underlyingError: error)
        }
        let signingKey = DPoPProof.SigningKey(key)
        remember(signingKey)
        return BoundKey(
            thumbprint: signingKey.thumbprint, algorithm: key.algorithm, storedKey: key.storedRepresentation)
    }

    /// Sets the `DPoP` header of `request` to a fresh proof signed with `key`.
    public func prove(_ request: inout URLRequest, with key: BoundKey, accessToken: String?) async throws {
        try setProof(on: &request, signedWith: try await signingKey(for: key), accessToken: accessToken)
    }

    /// Sets the `DPoP` header of `request` to a fresh proof now, when the key `key` names is
    /// loaded (``prove(_:with:accessToken:)`` or ``key(for:)`` used it before); signing is all it
    /// does: no I/O, no waiting.
    ///
    /// - Returns: `false` when the key is not loaded yet.
    public func proveImmediately(_ request: inout URLRequest, with key: BoundKey, accessToken: String?) throws -> Bool {
        guard let signingKey = signingKeys.withLock({ $0[key.thumbprint] }) else { return false }
        try setProof(on: &request, signedWith: signingKey, accessToken: accessToken)
        return true
    }

    private func setProof(
        on request: inout URLRequest, signedWith signingKey: DPoPProof.SigningKey, accessToken: String?
    )
        throws
    {
        guard let url = request.url else {
            throw DPoPError(.invalidRequest, "A request without URL cannot carry a DPoP proof.")
        }
        let target = try proofTarget(of: url)
        let proof = try DPoPProof.make(
            key: signingKey,
            method: request.httpMethod ?? "GET",
            target: target,
            issuedAt: clock.now,
            accessToken: accessToken,
            nonce: nonces.nonce(for: target)
        )
        // A JWS in compact form is base64url and dots: printable ASCII, nothing to check.
        request.setHeader("DPoP", toPrintableASCII: proof)
    }

    /// The target of `url`, read again only when the URL differs from the last one proved: a
    /// client proves many requests to one resource, and reading a URL costs a third of signing.
    private func proofTarget(of url: URL) throws -> ProofTarget {
        let text = url.absoluteString
        if let last = lastTarget.withLock({ $0 }), last.urlText == text { return last }
        let target = try ProofTarget(urlText: text)
        lastTarget.withLock { $0 = target }
        return target
    }

    /// Remembers the response's `DPoP-Nonce` for the request's origin; `true` when `error` is
    /// `use_dpop_nonce` and the server sent a nonce to use.
    public func didReceive(_ response: ResponseHead, error: OAuthErrorCode?, for request: URLRequest) -> Bool {
        let nonce = nonces.remember(response.value(forHTTPHeaderField: "DPoP-Nonce"), for: request.url)
        return error == .useDPoPNonce && nonce != nil
    }

    private func signingKey(for bound: BoundKey) async throws -> DPoPProof.SigningKey {
        if let ready = signingKeys.withLock({ $0[bound.thumbprint] }) { return ready }
        let key: any DPoPKey
        do {
            key = try await keySource.restoreKey(from: bound.storedKey, algorithm: bound.algorithm)
        } catch let error as DPoPError {
            throw error
        } catch {
            throw DPoPError(.keyUnavailable, "The DPoP key of the session cannot be loaded.", underlyingError: error)
        }
        let signingKey = DPoPProof.SigningKey(key)
        guard signingKey.thumbprint == bound.thumbprint else {
            throw DPoPError(.keyMismatch, "The loaded DPoP key is not the key the token is bound to.")
        }
        remember(signingKey)
        return signingKey
    }

    private func remember(_ signingKey: DPoPProof.SigningKey) {
        signingKeys.withLock { keys in
            if keys[signingKey.thumbprint] == nil, keys.count >= Self.keyCapacity, let some = keys.keys.first {
                keys[some] = nil
            }
            keys[signingKey.thumbprint] = signingKey
        }
    }
}
