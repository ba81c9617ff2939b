import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import ResourceDiscovery

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A resource, its authorization server and a registration endpoint, in memory, with knobs for
/// each way they can misbehave; it records every request.
package final class ResourceNetwork: Sendable {
    package struct Settings: Sendable {
        package var resource = "https://api.example.com/mcp"
        package var issuer = "https://auth.example.com"
        package var challenge =
            #"Bearer resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/mcp", scope="notes:read""#
        package var metadataResource: String? = nil
        package var metadataIssuer: String? = nil
        package var challengeMethods = #"["S256"]"#
        package var authMethods = #"["none","client_secret_basic"]"#
        package var scopesSupported = #"["notes:read","notes:write"]"#
        package var cimdSupported = false
        package var registrationReply: String? = nil
        package var tokenError: String? = nil
        /// The `token_type` of issued tokens (`DPoP` for a DPoP-bound token).
        package var tokenType = "Bearer"
        /// Whether tokens come with a refresh token (machine grants often have none).
        package var issuesRefreshTokens = true
        package init(
            resource: String = "https://api.example.com/mcp", metadataResource: String? = nil,
            metadataIssuer: String? = nil, challengeMethods: String = #"["S256"]"#,
            authMethods: String = #"["none","client_secret_basic"]"#, cimdSupported: Bool = false,
            registrationReply: String? = nil, tokenError: String? = nil
        ) {
            self.resource = resource
            self.metadataResource = metadataResource
            self.metadataIssuer = metadataIssuer
            self.challengeMethods = challengeMethods
            self.authMethods = authMethods
            self.cimdSupported = cimdSupported
            self.registrationReply = registrationReply
            self.tokenError = tokenError
        }
    }
    package let settings: Locked<Settings>
    package let requests = Locked<[URLRequest]>([])
    package let registrations = Locked<Int>(0)
    package let clock = TestClock()

    package init(_ settings: Settings = Settings()) { self.settings = Locked(settings) }

    package func requests(to path: String) -> [URLRequest] {
        requests.withLock { $0.filter { $0.url?.path == path } }
    }

    package static func form(_ request: URLRequest) -> [(String, String)] {
        let body = String(decoding: request.httpBody ?? Data(), as: UTF8.self)
        return URLComponents(string: "?" + body)?.queryItems?.map { ($0.name, $0.value ?? "") } ?? []
    }

    package var transport: InMemoryTransport {
        InMemoryTransport { [self] request in
            requests.withLock { $0.append(request) }
            let settings = self.settings.withLock { $0 }
            let url = request.url?.absoluteString ?? ""
            switch url {
            case settings.resource:
                if request.value(forHTTPHeaderField: "Authorization") != nil {
                    return try InMemoryTransport.reply(to: request, json: #"{"ok":true}"#)
                }
                return try InMemoryTransport.reply(
                    to: request, status: 401, headers: ["WWW-Authenticate": settings.challenge], json: "{}")
            case "https://api.example.com/.well-known/oauth-protected-resource/mcp":
                return try InMemoryTransport.reply(
                    to: request,
                    json: #"{"resource":"\#(settings.metadataResource ?? settings.resource)","#
                        + #""authorization_servers":["\#(settings.issuer)"],"scopes_supported":\#(settings.scopesSupported)}"#
                )
            case settings.issuer + "/.well-known/oauth-authorization-server":
                let issuer = settings.metadataIssuer ?? settings.issuer
                return try InMemoryTransport.reply(
                    to: request,
                    json: #"{"issuer":"\#(issuer)","authorization_endpoint":"\#(settings.issuer)/authorize","#
                        + #""token_endpoint":"\#(settings.issuer)/token","registration_endpoint":"\#(settings.issuer)/register","#
                        + #""code_challenge_methods_supported":\#(settings.challengeMethods),"#
                        + #""token_endpoint_auth_methods_supported":\#(settings.authMethods),"#
                        + #""client_id_metadata_document_supported":\#(settings.cimdSupported)}"#)
            case settings.issuer + "/register":
                let number = registrations.withLock {
                    $0 += 1; return $0
                }
                let body = try JSONSerialization.jsonObject(with: request.httpBody ?? Data()) as? [String: Any] ?? [:]
                let redirects = (body["redirect_uris"] as? [String] ?? []).map { "\"\($0)\"" }.joined(separator: ",")
                let method = body["token_endpoint_auth_method"] as? String ?? "client_secret_basic"
                let secret =
                    method == "none"
                    ? "" : #","client_secret":"registered-secret-\#(number)","client_secret_expires_at":0"#
                return try InMemoryTransport.reply(
                    to: request, status: 201,
                    json: settings.registrationReply
                        ?? #"{"client_id":"client-\#(number)","redirect_uris":[\#(redirects)],"token_endpoint_auth_method":"\#(method)"\#(secret)}"#
                )
            case settings.issuer + "/token":
                if let error = settings.tokenError {
                    return try InMemoryTransport.reply(to: request, status: 401, json: #"{"error":"\#(error)"}"#)
                }
                let grant = Self.form(request).first { $0.0 == "grant_type" }?.1 ?? ""
                return try InMemoryTransport.reply(
                    to: request,
                    json:
                        #"{"access_token":"at-\#(grant)-\#(UUID().uuidString)","token_type":"\#(settings.tokenType)","expires_in":60"#
                        + (settings.issuesRefreshTokens ? #","refresh_token":"rt-\#(UUID().uuidString)"}"# : "}"))
            case "https://login.example.com/token":
                // An enterprise identity provider: an ID-JAG for whatever is asked (Enterprise-Managed
                // Authorization).
                return try InMemoryTransport.reply(
                    to: request,
                    json:
                        #"{"access_token":"eyJ0eXAiOiJvYXV0aC1pZC1qYWcrand0In0.e30.jag-\#(UUID().uuidString)","#
                        + #""issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A","expires_in":300}"#
                )
            default:
                return try InMemoryTransport.reply(to: request, status: 404, json: "{}")
            }
        }
    }

    /// A user agent that approves at once, answering with the server's `iss`: `issuer`, or the
    /// origin of the authorization endpoint when `nil`.
    package struct Browser: AuthorizationUserAgent {
        package let opened = Locked<[URL]>([])
        /// The redirect URIs the sign-ins asked this agent to listen on.
        package let asked = Locked<[URL]>([])
        package let issuer: String?
        package init(issuer: String?) { self.issuer = issuer }
        package func begin(redirectURI: URL) async throws -> any AuthorizationUserAgentSession {
            asked.withLock { $0.append(redirectURI) }
            return Session(redirectURI: URL(string: "http://127.0.0.1:5555/callback")!, opened: opened, issuer: issuer)
        }
        struct Session: AuthorizationUserAgentSession {
            let redirectURI: URL
            let opened: Locked<[URL]>
            let issuer: String?
            func present(_ authorizationURL: URL) async throws -> URL {
                opened.withLock { $0.append(authorizationURL) }
                let issuer = self.issuer ?? "https://\(authorizationURL.host ?? "")"
                let items = URLComponents(url: authorizationURL, resolvingAgainstBaseURL: false)?.queryItems ?? []
                let state = items.first { $0.name == "state" }?.value ?? ""
                return URL(string: "\(redirectURI.absoluteString)?code=c0de&state=\(state)&iss=\(issuer)")!
            }
            func close() async {}
        }
    }

    package func signIn(
        method: ResourceSignIn.Method? = nil, policy: ClientRegistrationPolicy = .dynamic(clientName: "Notes"),
        store: any TokenStore = InMemoryTokenStore(), browser: Browser? = nil, resource: String? = nil,
        proofOfPossession: (any ProofOfPossession)? = nil
    ) -> ResourceSignIn {
        let settings = self.settings.withLock { $0 }
        return ResourceSignIn(
            resource: URL(string: resource ?? settings.resource)!,
            registration: policy,
            method: method ?? .browser(browser ?? Browser(issuer: settings.issuer)),
            store: store,
            configuration: .init(clock: clock, tokenTransport: transport, proofOfPossession: proofOfPossession))
    }
}
