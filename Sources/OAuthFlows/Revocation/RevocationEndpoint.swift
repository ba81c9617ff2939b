import AuthenticatedRequests
import Foundation

/// `token_type_hint` (RFC 7009 §2.1).
public struct TokenTypeHint: RawRepresentable, Hashable, Sendable {
    /// The wire value.
    public let rawValue: String
    /// Creates a hint from its wire value.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// `access_token`.
    public static let accessToken = TokenTypeHint(rawValue: "access_token")
    /// `refresh_token`.
    public static let refreshToken = TokenTypeHint(rawValue: "refresh_token")
}

/// An authorization server's revocation endpoint (RFC 7009) and the client that uses it.
public struct RevocationEndpoint: Sendable {
    /// The endpoint's URL.
    public let url: URL
    /// How the client authenticates (the same as at the token endpoint).
    public let client: ClientAuthentication

    /// Creates a revocation endpoint client.
    public init(url: URL, client: ClientAuthentication) {
        self.url = url
        self.client = client
    }

    /// Revokes `token` (RFC 7009 §2.1). A 200 means done, also for a token the server did not know.
    /// - Throws: `OAuthError` (e.g. `unsupported_token_type`), ``TokenEndpointError``, or a
    ///   transport error.
    public func revoke(_ token: String, hint: TokenTypeHint? = nil, context: AuthenticationContext) async throws {
        var parameters = [("token", token)]
        if let hint { parameters.append(("token_type_hint", hint.rawValue)) }
        let reply = try await FormPost.send(parameters, to: url, client: client, context: context)
        guard (200...299).contains(reply.statusCode) else {
            _ = try FormPost.jsonObject(from: reply, now: context.clock.now)  // throws the OAuth error
            throw TokenEndpointError(.unexpectedStatus, "Revocation failed.", reply: reply)
        }
    }
}

extension AuthenticationInterceptor where A == BearerTokenAuthenticator {
    /// Signs out: revokes the refresh token, then the access token, and clears the credential from
    /// memory and the store.
    ///
    /// Local state is cleared even when a revocation fails; the first failure is then thrown, so
    /// the caller can tell the user the server may still honour the tokens until they expire.
    public func signOut(revokingAt endpoint: RevocationEndpoint) async throws {
        let token = try? await currentCredential()
        var firstFailure: (any Error)?
        if let refreshToken = token?.refreshToken {
            do {
                try await endpoint.revoke(refreshToken, hint: .refreshToken, context: context)
            } catch {
                firstFailure = error
            }
        }
        if let accessToken = token?.accessToken {
            do {
                try await endpoint.revoke(accessToken, hint: .accessToken, context: context)
            } catch {
                firstFailure = firstFailure ?? error
            }
        }
        await clearCredential()
        if let firstFailure { throw firstFailure }
    }
}
