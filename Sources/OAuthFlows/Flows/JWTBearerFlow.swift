import AuthenticatedRequests
import Foundation

/// The JWT bearer grant (RFC 7523 §2.1): a token for an assertion, which its ``assertion``
/// source gives anew for every grant (a workload token a platform rotates, or one signed by the
/// client's key), so the grant after the first token expires presents a current assertion.
///
/// ```swift
/// let flow = JWTBearerFlow(
///     tokenEndpoint: URL(string: "https://auth.example.com/token")!,
///     client: .none(id: "batch-job"),
///     assertion: .file(URL(fileURLWithPath: "/var/run/secrets/tokens/token")),
///     scope: "reports:read")
/// let authenticator = OAuthAuthenticator(flow: flow)
/// ```
///
/// An assertion that has expired is not sent (``AssertionError``). When the token expires, its
/// refresh token is used if one was issued, and the grant runs again otherwise.
public struct JWTBearerFlow: OAuthFlow, CustomStringConvertible {
    /// `urn:ietf:params:oauth:grant-type:jwt-bearer`.
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// The token endpoint and client.
    public let endpoint: TokenEndpoint
    /// Gives the assertion for every grant.
    public let assertion: AssertionSource
    /// `scope`, if any.
    public let scope: String?

    /// Creates the flow.
    ///
    /// - Parameters:
    ///   - tokenEndpoint: The token endpoint's URL.
    ///   - client: How the client authenticates (`.none(id:)` when the assertion is the only
    ///     credential).
    ///   - assertion: Gives the assertion for every grant.
    ///   - scope: `scope`, space-delimited.
    ///   - resources: `resource` URIs (RFC 8707), each sent as its own parameter.
    public init(
        tokenEndpoint: URL, client: ClientAuthentication, assertion: AssertionSource, scope: String? = nil,
        resources: [URL] = []
    ) {
        self.endpoint = TokenEndpoint(url: tokenEndpoint, client: client, resources: resources)
        self.assertion = assertion
        self.scope = scope
    }

    /// Client, endpoint, the grant and the resources.
    public var storeKey: String {
        endpoint.storeKey + "#grant=jwt-bearer"
            + (endpoint.resources.isEmpty
                ? "" : "#resource=" + endpoint.resources.map(\.absoluteString).joined(separator: ","))
    }

    /// Runs the grant with the source's current assertion.
    public func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        try await grant(replacing: nil, context: context)
    }

    /// Refreshes with the refresh token when one was issued; runs the grant again otherwise.
    public func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        if token.refreshToken != nil { return try await endpoint.refresh(token, context: context) }
        return try await grant(replacing: token, context: context)
    }

    private func grant(replacing previous: OAuthToken?, context: AuthenticationContext) async throws -> OAuthToken {
        var parameters = [("assertion", try await assertion.assertion(for: context))]
        if let scope { parameters.append(("scope", scope)) }
        return try await endpoint.requestToken(
            grantType: Self.grantType, parameters: parameters, requestedScope: scope, replacing: previous,
            context: context)
    }

    /// The endpoint, the client and the source; no assertion.
    public var description: String { "JWTBearerFlow(\(endpoint.client), assertion: \(assertion))" }
}
