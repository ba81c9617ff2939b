import AuthenticatedRequests
import Foundation

/// OAuth 2.0 Token Exchange (RFC 8693): a token for a target (``audiences``, ``resources``,
/// ``scope``) in exchange for the ``subject`` token, and, for delegation, the ``actor`` token.
/// Both are asked from their sources for every exchange, so the second exchange after the
/// first token expires presents the subject's current token, not a stale one.
///
/// ```swift
/// let flow = TokenExchangeFlow(
///     tokenEndpoint: URL(string: "https://auth.example.com/token")!,
///     client: .clientSecretBasic(id: "gateway", secret: secret),
///     subject: .accessToken(of: userAuthenticator),
///     audiences: ["https://backend.example.com"])
/// let backend = OAuthAuthenticator(flow: flow)
/// ```
///
/// The reply is checked as RFC 8693 §2.2.1 asks: `issued_token_type` is required, and must be
/// the ``requestedTokenType`` when one was asked for; `token_type` `N_A` (a token that is not an
/// access token, such as an ID-JAG) is accepted, and the engine never sends such a token as a
/// bearer. When the exchanged token expires, its refresh token is used if one was issued, and
/// the exchange runs again otherwise.
public struct TokenExchangeFlow: OAuthFlow, CustomStringConvertible {
    /// `urn:ietf:params:oauth:grant-type:token-exchange`.
    public static let grantType = "urn:ietf:params:oauth:grant-type:token-exchange"

    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// The token the exchanged one acts for (`subject_token`, `subject_token_type`).
    public let subject: SecurityTokenSource
    /// The party that acts (`actor_token`, `actor_token_type`), for delegation; `nil` for
    /// impersonation.
    public let actor: SecurityTokenSource?
    /// `requested_token_type`, if any.
    public let requestedTokenType: TokenTypeURI?
    /// `audience` values (logical names of the targets).
    public let audiences: [String]
    /// `scope`, if any.
    public let scope: String?

    /// Creates the flow.
    ///
    /// - Parameters:
    ///   - tokenEndpoint: The token endpoint's URL.
    ///   - client: How the client authenticates.
    ///   - subject: Gives the subject token for every exchange.
    ///   - actor: Gives the actor token for every exchange (delegation); `nil` for none.
    ///   - requestedTokenType: The type of token wanted; the server's choice when `nil`.
    ///   - audiences: `audience` values, each sent as its own parameter.
    ///   - resources: `resource` URIs (RFC 8707), each sent as its own parameter.
    ///   - scope: `scope`, space-delimited.
    public init(
        tokenEndpoint: URL,
        client: ClientAuthentication,
        subject: SecurityTokenSource,
        actor: SecurityTokenSource? = nil,
        requestedTokenType: TokenTypeURI? = nil,
        audiences: [String] = [],
        resources: [URL] = [],
        scope: String? = nil
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client, resources: resources)
        self.subject = subject
        self.actor = actor
        self.requestedTokenType = requestedTokenType
        self.audiences = audiences
        self.scope = scope
    }

    /// `resource` URIs (RFC 8707).
    public var resources: [URL] { endpoint.resources }

    /// Client, endpoint, the requested type and the targets: two exchanges for different targets
    /// never share a stored token.
    public var storeKey: String {
        var key = endpoint.storeKey + "#grant=token-exchange"
        if let requestedTokenType { key += "#requested=\(requestedTokenType)" }
        if !audiences.isEmpty { key += "#audience=" + audiences.joined(separator: ",") }
        if !resources.isEmpty { key += "#resource=" + resources.map(\.absoluteString).joined(separator: ",") }
        return key
    }

    /// Runs the exchange.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        try await exchange(replacing: nil, context: context)
    }

    /// Refreshes with the refresh token when one was issued; exchanges again otherwise, with
    /// the sources' current tokens.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        if token.refreshToken != nil { return try await endpoint.refresh(token, context: context) }
        return try await exchange(replacing: token, context: context)
    }

    /// The exchange's parameters in RFC 8693 §2.1's order: `subject_token`, `subject_token_type`,
    /// then `actor_token` and `actor_token_type` together or not at all, `requested_token_type`,
    /// each `audience`, `scope` (the `resource` parameters follow, from the endpoint).
    func parameters(for context: AuthenticationContext) async throws -> [(String, String)] {
        let subjectToken = try await subject.token(for: context)
        var parameters = [("subject_token", subjectToken.value), ("subject_token_type", subjectToken.type.rawValue)]
        if let actor {
            let actorToken = try await actor.token(for: context)
            parameters += [("actor_token", actorToken.value), ("actor_token_type", actorToken.type.rawValue)]
        }
        if let requestedTokenType { parameters.append(("requested_token_type", requestedTokenType.rawValue)) }
        parameters += audiences.map { ("audience", $0) }
        if let scope { parameters.append(("scope", scope)) }
        return parameters
    }

    private func exchange(replacing previous: OAuthToken?, context: AuthenticationContext) async throws -> OAuthToken {
        let token = try await endpoint.requestToken(
            grantType: Self.grantType, parameters: try await parameters(for: context), requestedScope: scope,
            replacing: previous, context: context)
        try check(token)
        return token
    }

    /// RFC 8693 §2.2.1: `issued_token_type` present, and the one asked for when one was.
    func check(_ token: OAuthToken) throws {
        guard let issued = token.additionalFields["issued_token_type"]?.stringValue, !issued.isEmpty else {
            throw TokenEndpointError(
                .missingField, "The token exchange response has no issued_token_type (RFC 8693 §2.2.1).",
                field: "issued_token_type")
        }
        if let requestedTokenType, issued != requestedTokenType.rawValue {
            throw TokenEndpointError(
                .invalidField,
                "The token exchange issued another token type than the \(requestedTokenType) asked for; it was not used.",
                field: "issued_token_type")
        }
    }

    /// The endpoint, the client, the sources and the targets; no token.
    public var description: String {
        "TokenExchangeFlow(\(endpoint.client), subject: \(subject)"
            + (actor.map { ", actor: \($0)" } ?? "")
            + (requestedTokenType.map { ", requested: \($0)" } ?? "")
            + (audiences.isEmpty ? "" : ", audiences: \(audiences)") + ")"
    }
}
