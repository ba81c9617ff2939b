import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// For code that sends requests itself (an OpenAPI middleware, another HTTP client): the same
// engine, one step at a time.
extension AuthenticationInterceptor {
    /// Applies a valid credential to `request`, refreshing or obtaining it first when needed,
    /// with the same origin and plain-`http` rules as ``send(_:over:)``.
    ///
    /// ```swift
    /// var request = URLRequest(url: url)
    /// try await authenticator.authenticate(&request)
    /// var (body, response) = try await myClient.send(request)
    /// if response.statusCode == 401 {
    ///     let retry = try await authenticator.reauthenticate(afterRejectionOf: request)
    ///     (body, response) = try await myClient.send(retry)  // once; never more
    /// }
    /// ```
    ///
    /// The OpenAPI middleware (`OpenAPIAuthentication`) is built on these three calls.
    public nonisolated func authenticate(_ request: inout URLRequest) async throws {
        let (authenticator, credential, _) = try await credentialForRequest()
        try await authenticate(&request, with: credential, by: authenticator)
    }

    /// Whether `response` to `request` says the server rejected the credential, as the configured
    /// ``Authenticator`` classifies it (``Authenticator/didRequest(_:with:failDueToAuthenticationError:)``;
    /// status 401 by default). `false` before ``configure(with:credential:storeKey:)``.
    public nonisolated func isRejection(_ response: ResponseHead, of request: URLRequest) -> Bool {
        guard let authenticator = state.withLock({ $0.authenticator }) else { return false }
        return Self.isRejection(response, of: request, by: authenticator)
    }

    /// Reads `response` to `request`, which ``authenticate(_:)`` prepared, as the configured
    /// ``Authenticator`` does on the request path (``Authenticator/shouldResend(_:after:)``): call
    /// it with every response. It returns `request` with the credential applied afresh when the
    /// server asks for it once more (a DPoP nonce challenge: not a refresh), and `nil` otherwise.
    /// Resend at most once; call ``isRejection(_:of:)`` on the answer as on any other.
    public nonisolated func resendableRequest(_ request: URLRequest, after response: ResponseHead) async throws
        -> URLRequest?
    {
        guard let authenticator = state.withLock({ $0.authenticator }),
            authenticator.shouldResend(request, after: response)
        else { return nil }
        let (current, credential, _) = try await credentialForRequest()
        var resent = request
        try await authenticate(&resent, with: credential, by: current)
        return resent
    }

    /// Reports that the server rejected `request`, which ``authenticate(_:)`` prepared, and
    /// returns it again with a credential to retry it once: the current one when the rejected
    /// request carried an older one, otherwise the result of the one shared refresh (contract
    /// points 3 to 6). Retry once; a second rejection is the answer.
    public nonisolated func reauthenticate(afterRejectionOf request: URLRequest) async throws -> URLRequest {
        // The bridge does not say when it sent the request: take it as sent now, so a refresh
        // that failed earlier does not block this one (the request path knows better).
        // Nor which credential it carried: the current one, if the authenticator recognises it.
        let sent = state.withLock { state in
            state.credential.flatMap { credential in
                state.authenticator?.isRequest(request, authenticatedWith: credential) == true ? credential : nil
            }
        }
        let (authenticator, credential) = try await credentialForRetry(
            of: request, carrying: sent, sentAtEpoch: currentEpoch)
        var retry = request
        try await authenticate(&retry, with: credential, by: authenticator)
        await emit(.requestRetried, url: request.url)
        return retry
    }
}
