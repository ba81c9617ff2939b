// The example: a walk through the SDK against a real OAuth 2.0 server (the project's Authlib
// test server, which Scripts/run-example starts). Each step says in plain words what happens;
// tokens are never printed, only their redacted descriptions.
//
// Usage: authreq-example SERVER_URL [--browser]
//   --browser  open the sign-in page in your system browser instead of letting the example
//              play the browser.
import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `GET /api/me`: a protected resource of the server.
struct Me: AuthenticatedResource {
    struct Output: Decodable { let name: String }
    let authenticator: any RequestAuthenticator
    let server: URL
    func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(url: server.appendingPathComponent("api/me"))
    }
}

/// Plays the browser: follows the authorization URL and its redirects, as a browser would after
/// the user clicked "Allow".
struct FollowingBrowser: BrowserOpener {
    func open(_ url: URL) async throws {
        _ = try await URLSession.shared.data(from: url)
    }
}

/// Registers a demo client. Only the test server has this route; a real server registers
/// clients in its admin console or through RFC 7591.
func registerDemoClient(at server: URL, public isPublic: Bool) async throws -> (id: String, secret: String?) {
    var request = URLRequest(url: server.appendingPathComponent("test/clients"))
    request.httpMethod = "POST"
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    request.httpBody = Data(#"{"public": \#(isPublic)}"#.utf8)
    let (data, _) = try await URLSession.shared.data(for: request)
    let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    guard let id = object?["client_id"] as? String else { throw URLError(.badServerResponse) }
    return (id, object?["client_secret"] as? String)
}

func step(_ number: Int, _ text: String) {
    print("\n\(number). \(text)")
}

let arguments = CommandLine.arguments.dropFirst()
guard let serverArgument = arguments.first(where: { !$0.hasPrefix("--") }), let server = URL(string: serverArgument)
else {
    print("usage: authreq-example SERVER_URL [--browser]   (Scripts/run-example starts a server for you)")
    exit(2)
}
let useRealBrowser = arguments.contains("--browser")

do {
    step(1, "Discovering the authorization server at \(server)")
    let metadata = try await AuthorizationServerMetadata.discover(issuer: server)
    print("   issuer \(metadata.issuer); token endpoint \(metadata.tokenEndpoint?.absoluteString ?? "none")")

    step(2, "Client credentials: a service calls the API on its own behalf")
    let service = try await registerDemoClient(at: server, public: false)
    let serviceAuthenticator = OAuthAuthenticator(
        flow: try metadata.clientCredentialsFlow(
            client: .clientSecretBasic(id: service.id, secret: service.secret ?? ""),
            scope: "profile"
        )
    )
    let serviceMe = try await Me(authenticator: serviceAuthenticator, server: server).request()
    print("   /api/me answered for \(serviceMe.name)")
    print("   token: \(try await serviceAuthenticator.currentCredential().map { "\($0)" } ?? "none")")

    step(3, "Sign-in with the authorization code flow and PKCE (RFC 8252 loopback redirect)")
    let app = try await registerDemoClient(at: server, public: true)
    let tokenFolder = FileManager.default.temporaryDirectory.appendingPathComponent(
        "authreq-example-\(UUID().uuidString)")
    let store = FileTokenStore(directory: tokenFolder)
    let authenticator = OAuthAuthenticator(store: store, configuration: .init(leeway: 1))
    let events = await authenticator.events()
    let eventPrinter = Task {
        for await event in events { print("   [authenticator] \(event)") }
    }
    let manager = CodeFlowManager(
        configuration: try AuthenticationConfiguration(
            metadata: metadata,
            client: .none(id: app.id),
            redirectURI: URL(string: "http://127.0.0.1/callback")!,
            scope: "profile"
        ),
        userAgent: LoopbackUserAgent(opener: useRealBrowser ? SystemBrowserOpener() : FollowingBrowser())
    )
    print(useRealBrowser ? "   Opening your browser…" : "   The example plays the browser and approves.")
    let token = try await manager.signIn(configuring: authenticator)
    print("   signed in: \(token)")
    print(
        "   the token is stored in \(store.fileURL(forKey: "\(app.id)@\(metadata.tokenEndpoint?.absoluteString ?? "")").path) (mode 0600)"
    )
    print("   hello, \(try await Me(authenticator: authenticator, server: server).request().name)")

    let lifetime = token.expiresAt.map { $0.timeIntervalSinceNow } ?? 0
    step(4, "Waiting \(Int(lifetime.rounded())) s for the access token to expire; the next request refreshes it first")
    try await Task.sleep(for: .seconds(max(lifetime, 0)))
    print("   hello again, \(try await Me(authenticator: authenticator, server: server).request().name)")
    print("   token now: \(try await authenticator.currentCredential().map { "\($0)" } ?? "none")")

    step(5, "Sign-out: revoke the refresh token, then the access token, and clear the store")
    try await authenticator.signOut(revokingAt: try metadata.revocationEndpoint(client: .none(id: app.id)))
    let remaining = try await authenticator.currentCredential()
    print("   stored credential after sign-out: \(remaining.map { "\($0)" } ?? "none")")
    do {
        _ = try await Me(authenticator: authenticator, server: server).request()
        print("   unexpected: a request succeeded after sign-out")
        exit(1)
    } catch let error as AuthenticationError where error.code == .missingCredential {
        print("   a request now needs a new sign-in, as it should: \(error.message)")
    }
    try? await Task.sleep(for: .milliseconds(100))
    eventPrinter.cancel()
    try? FileManager.default.removeItem(at: tokenFolder)
    print("\nAll steps succeeded.")
} catch {
    print("\nFailed: \(error)")
    exit(1)
}
