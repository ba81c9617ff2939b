// The MCP example: an MCP client (the MCP Swift SDK's `Client` over its `HTTPClientTransport`)
// that signs in to a protected MCP server from nothing but its URL, then lists the server's tools
// and calls one. The sign-in (RFC 9728 discovery, client registration, a browser sign-in with PKCE
// and `resource`) happens at the first 401; the session is kept in a token folder, so the next
// run signs in with no browser, and an expired access token is refreshed once, however many
// calls are waiting for it.
//
// Usage: mcp-client-example SERVER_URL TOKEN_FOLDER [--client-name NAME] [--concurrent N]
//                           [--redirect-port PORT] [--no-browser] [SIGN-IN] [TOOL [KEY=VALUE ...]]
//   The browser is the system's ($BROWSER or xdg-open on Linux, `open` on macOS).
//   --no-browser  fail instead of opening a browser (a run that must restore a session).
//   --concurrent  call the tool N times at once.
//   --redirect-port  register and listen on http://127.0.0.1:PORT/callback. Without it, the port
//                 is chosen when the client registers and kept with the registration (servers
//                 that compare redirect URIs exactly, like the MCP Python SDK's, accept that).
// SIGN-IN, for a client registered beforehand at the MCP server's authorization server, whose
// issuer --issuer names (without it: dynamic registration and a browser sign-in):
//   --client-id ID --private-key PEM_FILE   machine to machine: client credentials, private_key_jwt
//   --client-id ID --client-secret SECRET   machine to machine: client credentials, HTTP Basic
//   --client-id ID --assertion-file FILE    a workload: the JWT bearer grant with the platform's
//                                           token file, read again for every grant
//   --client-id ID --client-secret SECRET --enterprise-provider ISSUER
//       --enterprise-client-id ID --enterprise-client-secret SECRET
//                                           enterprise-managed: the user signs in at the
//                                           enterprise's OpenID provider (once: the session is
//                                           kept), which issues an ID-JAG for the MCP server's
//                                           authorization server; no browser there
// Build it with the MCP trait: swift build --traits MCP --product mcp-client-example
#if MCP
    import AuthenticatedRequests
    import CodeFlowOAuth
    import Foundation
    import JWTKit
    import MCP
    import MCPAuthentication
    import OAuthFlows
    import OpenIDConnect
    import ResourceDiscovery

    var arguments = Array(CommandLine.arguments.dropFirst())
    /// Removes `--name VALUE` from `arguments` and returns the value.
    func option(_ name: String, in arguments: inout [String]) -> String? {
        guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
        defer { arguments.removeSubrange(index...(index + 1)) }
        return arguments[index + 1]
    }
    /// Removes `--name` from `arguments` and says whether it was there.
    func flag(_ name: String, in arguments: inout [String]) -> Bool {
        guard let index = arguments.firstIndex(of: name) else { return false }
        arguments.remove(at: index)
        return true
    }
    let clientName = option("--client-name", in: &arguments) ?? "mcp-client-example"
    let concurrent = Int(option("--concurrent", in: &arguments) ?? "1") ?? 1
    let noBrowser = flag("--no-browser", in: &arguments)
    let redirectURI =
        option("--redirect-port", in: &arguments).flatMap { URL(string: "http://127.0.0.1:\($0)/callback") }
        ?? ResourceSignIn.defaultRedirectURI
    let clientID = option("--client-id", in: &arguments)
    let issuer = option("--issuer", in: &arguments)
    let clientSecret = option("--client-secret", in: &arguments)
    let privateKeyFile = option("--private-key", in: &arguments)
    let assertionFile = option("--assertion-file", in: &arguments)
    let enterpriseProvider = option("--enterprise-provider", in: &arguments).flatMap(URL.init(string:))
    let enterpriseClientID = option("--enterprise-client-id", in: &arguments)
    let enterpriseClientSecret = option("--enterprise-client-secret", in: &arguments)
    guard arguments.count >= 2, let server = URL(string: arguments[0]) else {
        FileHandle.standardError.write(
            Data("usage: mcp-client-example SERVER_URL TOKEN_FOLDER [--client-name NAME] [TOOL [KEY=VALUE ...]]\n".utf8)
        )
        exit(2)
    }
    let tokens = URL(fileURLWithPath: arguments[1], isDirectory: true)
    let tool = arguments.count > 2 ? arguments[2] : nil
    var toolArguments: [String: Value] = [:]
    for pair in arguments.dropFirst(3) {
        let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { continue }
        toolArguments[parts[0]] = Int(parts[1]).map(Value.int) ?? .string(parts[1])
    }

    struct UsageError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
    let configuration = OAuthAuthenticator.Configuration()
    let store = FileTokenStore(directory: tokens)

    /// The user's session at the enterprise's OpenID provider: restored from the token folder, or
    /// signed in in the browser (with a refresh token, so later runs need no browser).
    func enterpriseSession(_ openID: OpenIDClient) async throws -> OAuthAuthenticator {
        if let session = try await openID.restore(store: store) { return session }
        guard !noBrowser else { throw UsageError("No enterprise session to restore, and --no-browser.") }
        let session = OAuthAuthenticator(store: store)
        _ = try await openID.signIn(
            redirectURI: redirectURI, scope: "openid profile offline_access",
            request: OpenIDAuthenticationRequest(prompt: "consent"), userAgent: LoopbackUserAgent(),
            configuring: session)
        return session
    }

    /// How the client signs in at the MCP server's authorization server, from the options.
    func signInMethod() async throws -> (ClientRegistrationPolicy, ResourceSignIn.Method) {
        guard let clientID else {
            let registration = ClientRegistrationPolicy.dynamic(
                clientName: clientName, redirectURIs: [redirectURI],
                compatibility: .clientIDInBodyWithBasicAuthentication)  // the MCP Python SDK's servers need it
            return (registration, noBrowser ? .nonInteractive : .browser(LoopbackUserAgent()))
        }
        var client = ClientAuthentication.none(id: clientID)
        if let clientSecret { client = .clientSecretBasic(id: clientID, secret: clientSecret) }
        if let privateKeyFile {
            let pem = try String(contentsOfFile: privateKeyFile, encoding: .utf8)
            client = .assertion(id: clientID, signer: PrivateKeyJWT(key: try ES256PrivateKey(pem: pem)))
        }
        // Credentials belong to one authorization server: the one the client was registered at.
        guard let issuer else { throw UsageError("--client-id needs --issuer.") }
        let registration = ClientRegistrationPolicy(preRegistered: [issuer: client])
        if let assertionFile {
            return (registration, .jwtBearer(.file(URL(fileURLWithPath: assertionFile))))
        }
        if let enterpriseProvider, let enterpriseClientID, let enterpriseClientSecret {
            let provider = try await OpenIDProvider.discover(issuer: enterpriseProvider)
            let openID = OpenIDClient(
                provider: provider, client: .clientSecretBasic(id: enterpriseClientID, secret: enterpriseClientSecret))
            let grant = try IdentityAssertionGrant(openID: openID, session: try await enterpriseSession(openID))
            return (registration, .enterpriseManaged(grant))
        }
        return (registration, .clientCredentials)
    }

    var lastAuthorizer: MCPAuthorizer?
    do {
        let (registration, method) = try await signInMethod()
        let signIn = ResourceSignIn(
            resource: server, registration: registration, method: method, store: store,
            configuration: configuration, redirectURI: redirectURI)
        let authorizer = MCPAuthorizer(signIn: signIn)
        lastAuthorizer = authorizer
        let transport = authorizer.makeTransport(streaming: false)
        let client = Client(name: clientName, version: "1.0")
        _ = try await client.connect(transport: transport)
        let (tools, _) = try await client.listTools()
        print("tools: \(tools.map(\.name).sorted().joined(separator: ", "))")
        if let tool {
            let results = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<max(concurrent, 1) {
                    group.addTask {
                        let (content, isError) = try await client.callTool(name: tool, arguments: toolArguments)
                        let texts = content.compactMap { item -> String? in
                            if case .text(let text, _, _) = item { return text }
                            return nil
                        }
                        return (isError == true ? "error: " : "") + texts.joined(separator: " ")
                    }
                }
                var results: [String] = []
                for try await result in group { results.append(result) }
                return results
            }
            for result in results { print("\(tool): \(result)") }
        }
        await client.disconnect()
    } catch {
        // The transport passes on only the text of an authorization error; the authorizer keeps it whole.
        let detail = lastAuthorizer?.lastError.map { String(describing: $0) } ?? String(describing: error)
        FileHandle.standardError.write(Data("error: \(detail)\n".utf8))
        exit(1)
    }
#else
    import Foundation
    FileHandle.standardError.write(Data("Build with the MCP trait: swift build --traits MCP\n".utf8))
    exit(2)
#endif
