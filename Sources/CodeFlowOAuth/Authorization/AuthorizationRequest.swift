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
    /// and the additional parameters.
    public init(configuration: AuthenticationConfiguration, redirectURI: URL) throws {
        guard var components = URLComponents(url: configuration.authorizationEndpoint, resolvingAgainstBaseURL: false)
        else {
            throw CodeFlowError(.invalidConfiguration, "The authorization endpoint is not a valid URL.")
        }
        let state = Self.makeState()
        let pkce = try configuration.codeFlowConfiguration.makePKCE()
        var items = components.queryItems ?? []
        items.append(URLQueryItem(name: "response_type", value: "code"))
        items.append(URLQueryItem(name: "client_id", value: configuration.client.clientID))
        items.append(URLQueryItem(name: "redirect_uri", value: redirectURI.absoluteString))
        if let scope = configuration.scope { items.append(URLQueryItem(name: "scope", value: scope)) }
        items.append(URLQueryItem(name: "state", value: state))
        if let pkce {
            items.append(URLQueryItem(name: "code_challenge", value: pkce.challenge))
            items.append(URLQueryItem(name: "code_challenge_method", value: pkce.method.rawValue))
        }
        for (name, value) in configuration.additionalParameters.sorted(by: { $0.key < $1.key }) {
            items.append(URLQueryItem(name: name, value: value))
        }
        // URLComponents leaves `+` and `/` alone in query values (a `+` would then read as a
        // space); encode every reserved character so that values arrive exactly as given.
        components.percentEncodedQuery = items.map { item in
            FormEncoding.encode(item.name, spaceAsPlus: false) + "="
                + FormEncoding.encode(item.value ?? "", spaceAsPlus: false)
        }.joined(separator: "&")
        guard let url = components.url else {
            throw CodeFlowError(.invalidConfiguration, "Could not build the authorization URL.")
        }
        self.url = url
        self.redirectURI = redirectURI
        self.state = state
        self.pkce = pkce
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
