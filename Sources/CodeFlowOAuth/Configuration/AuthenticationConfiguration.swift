import AuthenticatedRequests
import Foundation
import OAuthFlows

/// Everything a ``CodeFlowManager`` needs to run the authorization code flow with one server.
public struct AuthenticationConfiguration: Sendable {
    /// The authorization endpoint (RFC 6749 §3.1); its own query items are kept.
    public var authorizationEndpoint: URL
    /// The token endpoint (RFC 6749 §3.2).
    public var tokenEndpoint: URL
    /// The client and how it authenticates at the token endpoint (`.none(id:)` for native apps).
    public var client: ClientAuthentication
    /// `redirect_uri`. A loopback user agent replaces its port with the one it listens on.
    public var redirectURI: URL
    /// `scope`, space-delimited.
    public var scope: String?
    /// Further authorization request parameters (e.g. `prompt`, `login_hint`, `resource`).
    public var additionalParameters: [String: String]
    /// PKCE or not.
    public var codeFlowConfiguration: any CodeFlowConfiguration
    /// The server's issuer identifier, for the RFC 9207 `iss` check.
    public var issuer: String?
    /// Whether the redirect must carry `iss` (the server's metadata says
    /// `authorization_response_iss_parameter_supported`).
    public var requiresIssuerParameter: Bool
    /// RFC 8707 resource indicators: each is sent as a `resource` parameter of the authorization
    /// request and of the token requests (the code exchange and every refresh).
    public var resources: [URL]
    /// The resources named at the token endpoint (the code exchange and every refresh) when they
    /// differ from ``resources``: a grant for several resources whose first token is for one of
    /// them (an audience-bound token, RFC 8707 §2.2). `nil`, the default, names ``resources``.
    public var tokenRequestResources: [URL]? = nil
    /// RFC 9396 `authorization_details`: sent with the authorization request (pushed with it when
    /// it is pushed) and the code exchange; what the server granted comes back with the token
    /// (`OAuthToken.authorizationDetails`). Empty, the default, sends none.
    public var authorizationDetails: [AuthorizationDetail] = []
    /// Signs the request as a request object (RFC 9101, JAR): the browser, or the pushed request
    /// under PAR, then carries only `client_id`, `request` and the
    /// ``parametersRepeatedInBrowser``. `nil`, the default, sends plain parameters.
    public var requestObjectSigner: (any RequestObjectSigner)? = nil
    /// The server's `request_object_signing_alg_values_supported`; when not empty, a request
    /// object in another algorithm is refused before anything is sent.
    public var requestObjectSigningAlgorithms: [String] = []
    /// Asks for a signed authorization response (JARM: `response_mode=jwt`) and verifies it with
    /// this before anything in it is used. `nil`, the default, asks for plain parameters.
    public var signedResponseVerifier: (any SignedAuthorizationResponseVerifier)? = nil
    /// How the signed response comes back (JARM §2.3), when ``signedResponseVerifier`` is set:
    /// ``SignedResponseMode/jwt`` unless given. The user agent must be able to receive it.
    public var signedResponseMode: SignedResponseMode = .jwt
    /// The server's `response_modes_supported`; when not empty, a signed response mode it does
    /// not list is refused before anything is sent.
    public var responseModesSupported: [String] = []
    /// The pushed authorization request endpoint (RFC 9126). When set, the authorization request
    /// is pushed there, authenticated like a token request, and the browser opens only
    /// `client_id`, `request_uri` and the ``parametersRepeatedInBrowser``.
    public var pushedAuthorizationRequestEndpoint: URL?
    /// Parameters of a pushed request that are repeated in the browser's URL, for servers that
    /// want them there too (idpyoidc 5.0.0 wants `response_type`, `scope` and `redirect_uri`).
    /// Empty unless given: RFC 9126 needs only `client_id` and `request_uri`.
    public var parametersRepeatedInBrowser: [String]

    /// Creates a configuration by hand.
    ///
    /// - Parameters:
    ///   - authorizationEndpoint: The authorization endpoint.
    ///   - tokenEndpoint: The token endpoint.
    ///   - client: The client and how it authenticates.
    ///   - redirectURI: `redirect_uri`.
    ///   - scope: `scope`, space-delimited.
    ///   - additionalParameters: Further authorization request parameters.
    ///   - codeFlowConfiguration: PKCE or not.
    ///   - issuer: The server's issuer identifier, for the RFC 9207 `iss` check.
    ///   - requiresIssuerParameter: Whether the redirect must carry `iss`.
    ///   - resources: RFC 8707 resource indicators.
    ///   - pushedAuthorizationRequestEndpoint: Where to push the request (RFC 9126); `nil` to
    ///     send it in the browser's URL.
    ///   - parametersRepeatedInBrowser: Pushed parameters to repeat in the browser's URL.
    public init(
        authorizationEndpoint: URL,
        tokenEndpoint: URL,
        client: ClientAuthentication,
        redirectURI: URL,
        scope: String? = nil,
        additionalParameters: [String: String] = [:],
        codeFlowConfiguration: any CodeFlowConfiguration = PKCECodeFlowConfiguration(),
        issuer: String? = nil,
        requiresIssuerParameter: Bool = false,
        resources: [URL] = [],
        pushedAuthorizationRequestEndpoint: URL? = nil,
        parametersRepeatedInBrowser: [String] = []
    ) {
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        // The issuer is the audience of the client's assertions (RFC 10070).
        self.client = issuer.map { client.at(issuer: $0) } ?? client
        self.redirectURI = redirectURI
        self.scope = scope
        self.additionalParameters = additionalParameters
        self.codeFlowConfiguration = codeFlowConfiguration
        self.issuer = issuer
        self.requiresIssuerParameter = requiresIssuerParameter
        self.resources = resources
        self.pushedAuthorizationRequestEndpoint = pushedAuthorizationRequestEndpoint
        self.parametersRepeatedInBrowser = parametersRepeatedInBrowser
    }

    /// Creates a configuration from discovered metadata: endpoints, issuer and the `iss` rule.
    ///
    /// The request is pushed (RFC 9126) when `pushesAuthorizationRequests` is `true` or the server
    /// says `require_pushed_authorization_requests`.
    ///
    /// - Parameters:
    ///   - metadata: The server's metadata.
    ///   - client: The client and how it authenticates.
    ///   - redirectURI: `redirect_uri`.
    ///   - scope: `scope`, space-delimited.
    ///   - additionalParameters: Further authorization request parameters.
    ///   - codeFlowConfiguration: PKCE or not.
    ///   - resources: RFC 8707 resource indicators.
    ///   - pushesAuthorizationRequests: Whether to push the request though the server does not
    ///     require it.
    ///   - parametersRepeatedInBrowser: Pushed parameters to repeat in the browser's URL.
    /// - Throws: ``CodeFlowError`` when an endpoint is missing, e.g. the pushed authorization
    ///   request endpoint of a server that requires pushed requests.
    public init(
        metadata: AuthorizationServerMetadata,
        client: ClientAuthentication,
        redirectURI: URL,
        scope: String? = nil,
        additionalParameters: [String: String] = [:],
        codeFlowConfiguration: any CodeFlowConfiguration = PKCECodeFlowConfiguration(),
        resources: [URL] = [],
        pushesAuthorizationRequests: Bool = false,
        parametersRepeatedInBrowser: [String] = []
    ) throws {
        guard let authorizationEndpoint = metadata.authorizationEndpoint else {
            throw CodeFlowError(.invalidConfiguration, "The server metadata has no authorization_endpoint.")
        }
        // The mutual-TLS aliases (RFC 8705 §5) for a client that uses mutual TLS; the
        // authorization endpoint is the browser's, never an alias.
        let server = metadata.resolved(for: client)
        let pushes = pushesAuthorizationRequests || metadata.requirePushedAuthorizationRequests
        guard !pushes || server.pushedAuthorizationRequestEndpoint != nil else {
            throw CodeFlowError(
                .invalidConfiguration,
                metadata.requirePushedAuthorizationRequests
                    ? "The server requires pushed authorization requests but names no "
                        + "pushed_authorization_request_endpoint."
                    : "The server metadata has no pushed_authorization_request_endpoint.")
        }
        self.init(
            authorizationEndpoint: authorizationEndpoint,
            tokenEndpoint: try metadata.tokenEndpoint(client: client).url,
            client: client,
            redirectURI: redirectURI,
            scope: scope,
            additionalParameters: additionalParameters,
            codeFlowConfiguration: codeFlowConfiguration,
            issuer: metadata.issuer,
            requiresIssuerParameter: metadata.authorizationResponseIssParameterSupported,
            resources: resources,
            pushedAuthorizationRequestEndpoint: pushes ? server.pushedAuthorizationRequestEndpoint : nil,
            parametersRepeatedInBrowser: parametersRepeatedInBrowser
        )
        requestObjectSigningAlgorithms =
            metadata.fields["request_object_signing_alg_values_supported"]?.arrayValue?.compactMap(\.stringValue) ?? []
        responseModesSupported =
            metadata.fields["response_modes_supported"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }
}

extension AuthenticationConfiguration {
    /// ``authorizationDetails`` as the `authorization_details` parameter, for the authorization
    /// request and the code exchange alike; `nil` when there are none.
    func authorizationDetailsParameter() throws -> String? {
        authorizationDetails.isEmpty ? nil : try AuthorizationDetail.parameter(authorizationDetails)
    }
}
