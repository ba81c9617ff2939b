import AuthenticatedRequests
import Foundation
import OAuthFlows

/// One authorization request (RFC 6749 §4.1.1): the URL to open, and the secrets to check the
/// response against and to exchange the code with.
public struct AuthorizationRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The URL to open in the browser.
    public let url: URL
    /// `redirect_uri`, as sent.
    public let redirectURI: URL
    /// `state`: 256 bits from the CSPRNG, base64url.
    public let state: String
    /// The PKCE pair, when the configuration uses PKCE.
    public let pkce: PKCE?

    /// Builds the request: the endpoint's own query items are kept, then `response_type=code`,
    /// `client_id`, `redirect_uri`, `scope`, `state`, `code_challenge`, `code_challenge_method`,
    /// the additional parameters, and a `resource` for each resource indicator.
    public init(configuration: AuthenticationConfiguration, redirectURI: URL) throws {
        let state = Self.makeState()
        let pkce = try configuration.codeFlowConfiguration.makePKCE()
        var parameters = [
            ("response_type", "code"),
            ("client_id", configuration.client.clientID),
            ("redirect_uri", redirectURI.absoluteString),
        ]
        if let scope = configuration.scope { parameters.append(("scope", scope)) }
        parameters.append(("state", state))
        if let pkce {
            parameters.append(("code_challenge", pkce.challenge))
            parameters.append(("code_challenge_method", pkce.method.rawValue))
        }
        if configuration.signedResponseVerifier != nil {
            parameters.append(("response_mode", try Self.responseMode(configuration)))
        }
        parameters += configuration.additionalParameters.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value) }
        if let details = try configuration.authorizationDetailsParameter() {
            parameters.append(("authorization_details", details))
        }
        for resource in configuration.resources {
            guard resource.scheme != nil, !resource.absoluteString.contains("#") else {
                throw CodeFlowError(
                    .invalidConfiguration,
                    "The resource indicator \(resource.redactedForDisplay) is not an absolute URI without a "
                        + "fragment (RFC 8707 §2).")
            }
            parameters.append(("resource", resource.absoluteString))
        }
        self.init(
            url: try Self.url(configuration.authorizationEndpoint, adding: parameters),
            redirectURI: redirectURI, state: state, pkce: pkce, parameters: parameters)
    }

    /// The `response_mode` of a signed response: the configuration's, or `query.jwt` for `jwt`
    /// when the server lists only that.
    /// - Throws: ``CodeFlowError`` (`invalidConfiguration`) when the server lists response modes
    ///   and not this one.
    private static func responseMode(_ configuration: AuthenticationConfiguration) throws -> String {
        let mode = configuration.signedResponseMode
        let supported = configuration.responseModesSupported
        if supported.isEmpty || supported.contains(mode.rawValue) { return mode.rawValue }
        if mode == .jwt, supported.contains(SignedResponseMode.queryJWT.rawValue) {
            return SignedResponseMode.queryJWT.rawValue
        }
        throw CodeFlowError(
            .invalidConfiguration,
            "The server returns authorization responses as \(supported.joined(separator: ", ")), not "
                + "response_mode=\(mode); nothing was sent.")
    }

    private init(url: URL, redirectURI: URL, state: String, pkce: PKCE?, parameters: [(String, String)]) {
        self.url = url
        self.redirectURI = redirectURI
        self.state = state
        self.pkce = pkce
        self.parameters = parameters
    }

    /// The request's parameters, in the order sent (without the endpoint's own query items).
    package let parameters: [(String, String)]

    /// This request pushed (RFC 9126 §4): the browser's URL carries `client_id`, the
    /// `request_uri` of `response`, and the parameters named in
    /// ``AuthenticationConfiguration/parametersRepeatedInBrowser``; state and PKCE are unchanged.
    package func pushed(_ response: PushedAuthorizationResponse, configuration: AuthenticationConfiguration) throws
        -> AuthorizationRequest
    {
        var browser = parameters.filter { $0.0 == "client_id" }
        browser.append(("request_uri", response.requestURI))
        browser += parameters.filter { configuration.parametersRepeatedInBrowser.contains($0.0) && $0.0 != "client_id" }
        return AuthorizationRequest(
            url: try Self.url(configuration.authorizationEndpoint, adding: browser),
            redirectURI: redirectURI, state: state, pkce: pkce, parameters: parameters)
    }

    /// This request as a signed request object (RFC 9101 §5): its parameters become the claims
    /// (repeated ones an array, `authorization_details` its JSON), and the request sends
    /// `client_id`, `request` and the ``AuthenticationConfiguration/parametersRepeatedInBrowser``;
    /// state and PKCE are unchanged.
    ///
    /// - Throws: ``CodeFlowError`` (`invalidConfiguration`) without the server's issuer (the
    ///   audience), or when the server lists request object algorithms and not the signer's.
    package func signedAsRequestObject(by signer: any RequestObjectSigner, configuration: AuthenticationConfiguration)
        async throws -> AuthorizationRequest
    {
        guard let issuer = configuration.issuer else {
            throw CodeFlowError(.invalidConfiguration, "A request object needs the server's issuer as its audience.")
        }
        let supported = configuration.requestObjectSigningAlgorithms
        guard supported.isEmpty || supported.contains(signer.requestObjectAlgorithm) else {
            throw CodeFlowError(
                .invalidConfiguration,
                "The server accepts request objects signed with \(supported.joined(separator: ", ")), not "
                    + "\(signer.requestObjectAlgorithm); nothing was sent.")
        }
        var claims: [String: JSONValue] = [:]
        for (name, text) in parameters {
            let value: JSONValue =
                name == "authorization_details"
                ? (try? JSONValue(parsing: Data(text.utf8))) ?? .string(text) : .string(text)
            claims[name] = claims[name].map { .array(($0.arrayValue ?? [$0]) + [value]) } ?? value
        }
        let clientID = configuration.client.clientID
        let object = try await signer.requestObject(clientID: clientID, audience: issuer, parameters: claims)
        var sent = [("client_id", clientID), ("request", object)]
        sent += parameters.filter { configuration.parametersRepeatedInBrowser.contains($0.0) && $0.0 != "client_id" }
        return AuthorizationRequest(
            url: try Self.url(configuration.authorizationEndpoint, adding: sent),
            redirectURI: redirectURI, state: state, pkce: pkce, parameters: sent)
    }

    /// `endpoint` with `parameters` after its own query items.
    private static func url(_ endpoint: URL, adding parameters: [(String, String)]) throws -> URL {
        guard var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false) else {
            throw CodeFlowError(.invalidConfiguration, "The authorization endpoint is not a valid URL.")
        }
        var items = (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }
        items += parameters
        // URLComponents leaves `+` and `/` alone in query values (a `+` would then read as a
        // space); encode every reserved character so that values arrive exactly as given.
        components.percentEncodedQuery = FormEncoding.encode(items, spaceAsPlus: false)
        guard let url = components.url else {
            throw CodeFlowError(.invalidConfiguration, "Could not build the authorization URL.")
        }
        return url
    }

    /// 32 bytes from the system CSPRNG, base64url without padding: a `state`, and the nonces,
    /// logout states and assertion `jti`s of the OpenIDConnect module.
    package static func makeState() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<4).flatMap { _ in withUnsafeBytes(of: generator.next() as UInt64) { Array($0) } }
        return Data(bytes).base64URLEncodedString()
    }

    /// The URL's endpoint and redirect URI; state and verifier are not shown.
    public var description: String {
        "AuthorizationRequest(endpoint: \(url.redactedForDisplay), redirectURI: \(redirectURI), "
            + "state: \(Redaction.placeholder), pkce: \(pkce.map { $0.method.rawValue } ?? "none"))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror showing only the redacted description, so `dump` and debuggers do not show the
    /// state or the verifier.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
