import AuthenticatedRequests
import Foundation

/// The authorization code grant's token request (RFC 6749 §4.1.3, with RFC 7636 PKCE): exchanges
/// the code from the redirect for tokens; later refreshes use the refresh token grant.
///
/// A code is single-use: it is sent at most once, and never again after a failure; a second
/// exchange fails with `AuthenticationError.Code.missingCredential` (sign in again).
/// `CodeFlowManager` (module `CodeFlowOAuth`) produces this flow for you.
public final class AuthorizationCodeFlow: OAuthFlow, CustomStringConvertible {
    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// `redirect_uri`: the redirect URI of the authorization request, sent again as required.
    public let redirectURI: String
    /// Further token request parameters, sent sorted by name.
    public let additionalParameters: [String: String]
    /// The account the session belongs to, for apps with several; part of ``storeKey``.
    public let account: String?
    private let code: String
    /// The authorization code, for the ID token's `c_hash` (OpenIDConnect).
    package var authorizationCode: String { code }
    private let codeVerifier: String?
    private let isUsed = Locked(false)

    /// Creates the flow.
    /// - Parameters:
    ///   - tokenEndpoint: The token endpoint's URL.
    ///   - client: How the client authenticates; `.none(id:)` for public clients.
    ///   - code: `code`, from the authorization response.
    ///   - redirectURI: `redirect_uri`, exactly as the authorization request sent it.
    ///   - codeVerifier: `code_verifier` (RFC 7636 §4.5), when the request carried a challenge.
    ///   - additionalParameters: Further token request parameters.
    ///   - account: The account the session belongs to, for apps with several.
    ///   - resources: RFC 8707 resource indicators for the token request and its refreshes.
    public init(
        tokenEndpoint: URL,
        client: ClientAuthentication,
        code: String,
        redirectURI: String,
        codeVerifier: String?,
        additionalParameters: [String: String] = [:],
        account: String? = nil,
        resources: [URL] = []
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client, resources: resources)
        self.account = account
        self.code = code
        self.redirectURI = redirectURI
        self.codeVerifier = codeVerifier
        self.additionalParameters = additionalParameters
    }

    /// The seed package's `ARCodeFlow(clientID:code:redirectUrl:codeVerifier:)`: a public client.
    /// - Parameters:
    ///   - tokenEndpoint: The token endpoint's URL.
    ///   - clientID: `client_id`.
    ///   - code: `code`, from the authorization response.
    ///   - redirectUrl: `redirect_uri`, exactly as the authorization request sent it.
    ///   - codeVerifier: `code_verifier`, when the request carried a challenge.
    public convenience init(
        tokenEndpoint: URL, clientID: String, code: String, redirectUrl: String, codeVerifier: String?
    ) {
        self.init(
            tokenEndpoint: tokenEndpoint,
            client: .none(id: clientID),
            code: code,
            redirectURI: redirectUrl,
            codeVerifier: codeVerifier
        )
    }

    /// Client, endpoint and account: see ``TokenEndpoint/storeKey(account:)``.
    public var storeKey: String { endpoint.storeKey(account: account) }

    /// Exchanges the code, once.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        let alreadyUsed = isUsed.withLock { used in
            defer { used = true }
            return used
        }
        guard !alreadyUsed else {
            throw AuthenticationError(
                code: .missingCredential,
                message: "The authorization code was already used; start a new authorization."
            )
        }
        var parameters = [("code", code), ("redirect_uri", redirectURI)]
        if let codeVerifier { parameters.append(("code_verifier", codeVerifier)) }
        parameters += additionalParameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return try await endpoint.requestToken(
            grantType: "authorization_code",
            parameters: parameters,
            context: context
        )
    }

    /// Refreshes with the refresh token grant.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        try await endpoint.refresh(token, context: context)
    }

    /// The flow without its code or verifier.
    public var description: String {
        "AuthorizationCodeFlow(\(endpoint.client), tokenEndpoint: \(endpoint.url.redactedForDisplay), code: <redacted>)"
    }
}
