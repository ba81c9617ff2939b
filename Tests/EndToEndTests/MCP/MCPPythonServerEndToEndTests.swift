import AuthenticatedRequests
import Crypto
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The MCP server that `Scripts/test` starts (the MCP Python SDK, `Tests/MCPServer`); its MCP
/// endpoint comes in `AUTHREQ_TEST_MCP`.
enum TestMCPServer {
    static let url: URL? = ProcessInfo.processInfo.environment["AUTHREQ_TEST_MCP"].flatMap(URL.init(string:))
    static let isConfigured = url != nil
    static let notRunReason: Comment =
        "AUTHREQ_TEST_MCP is not set, so the MCP end-to-end tests were NOT run. Run Scripts/test to run them."

    static var endpoint: URL {
        get throws { try #require(url, notRunReason) }
    }

    /// The server's record of an access token it issued (found by the token's SHA-256): the client
    /// name it was issued to, when it expires (seconds since 1970, the server's clock, which is this
    /// machine's), and how many presentations it accepted or refused as expired.
    struct TokenRecord: Decodable {
        let client: String
        let expires_at: Int
        let accepted: Int
        let refused_expired: Int
    }

    static func tokenRecord(_ token: String) async throws -> TokenRecord {
        let digest = SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
        let url = try #require(URL(string: "/test/token/\(digest)", relativeTo: try endpoint))
        let (data, response) = try await URLSession.shared.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200, "the server issued this token")
        return try JSONDecoder().decode(TokenRecord.self, from: data)
    }

    /// The server's counts: registrations, authorizations, code exchanges and refreshes, also
    /// per client name (`refresh:<name>`), and rotated refresh tokens presented again.
    static func stats() async throws -> [String: Int] {
        let stats = try #require(URL(string: "/test/stats", relativeTo: try endpoint))
        let (data, _) = try await URLSession.shared.data(from: stats)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Int]) ?? [:]
    }
}

#if MCP
    import MCP
    @testable import ReadmeSnippets

    /// The README's agent snippet (`Examples/ReadmeSnippets/Landing/MCPClient.swift`, byte-identical
    /// to the README's block), run as it is against the MCP Python SDK's server: the system browser
    /// (`$BROWSER`, a script that plays the user), a registration with the exact redirect URI, the
    /// tools listed.
    @Suite(.enabled(if: TestMCPServer.isConfigured, TestMCPServer.notRunReason))
    struct ReadmeAgentSnippetTests {
        @Test func theReadmesAgentSnippetSignsInToTheMCPPythonServerWithNoChange() async throws {
            let setup = try await MCPPythonServerEndToEndTests.Setup(name: "My Agent")
            // The only process-wide setting, read by the snippet's LoopbackUserAgent(); no other
            // test opens the system browser.
            setenv("BROWSER", setup.browser.path, 1)
            let before = try await TestMCPServer.stats()["registered:My Agent"] ?? 0
            let tools = try await listTools(at: try TestMCPServer.endpoint, tokens: setup.tokens)
            #expect(tools.map(\.name).sorted() == ["add", "echo"])
            #expect(try await TestMCPServer.stats()["registered:My Agent"] == before + 1)
            // A second run restores the session: no browser, no registration.
            setenv("BROWSER", "/bin/false", 1)
            #expect(try await listTools(at: try TestMCPServer.endpoint, tokens: setup.tokens).count == 2)
            #expect(try await TestMCPServer.stats()["registered:My Agent"] == before + 1)
        }
    }
#endif

/// Guards against a silent skip: in CI (`CI` set) the MCP server must be there.
@Test func mcpEndToEndTestsHaveAServerInCI() {
    if ProcessInfo.processInfo.environment["CI"] != nil {
        #expect(TestMCPServer.isConfigured, "CI must run the MCP end-to-end tests: use Scripts/test")
    }
}

/// The MCP example (`mcp-client-example`: the MCP Swift SDK's `Client` over its
/// `HTTPClientTransport`, with `MCPAuthorizer`) against the MCP Python SDK's server, each step a
/// new process with nothing but the server's URL and a token folder.
@Suite(.enabled(if: TestMCPServer.isConfigured, TestMCPServer.notRunReason))
struct MCPPythonServerEndToEndTests {
    /// The example client, built next to the test binary.
    static var example: URL {
        TestHelperProcess.executable.deletingLastPathComponent().appendingPathComponent("mcp-client-example")
    }

    /// A sign-in's setup of its own: a client name, a token folder and a browser script.
    struct Setup {
        let name: String
        let tokens: URL
        let browser: URL

        init(name: String) async throws {
            self.name = name
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mcp-e2e-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            tokens = folder.appendingPathComponent("tokens")
            // The user who clicks "Allow": follows the authorization URL and its redirects.
            browser = folder.appendingPathComponent("browser.sh")
            try "#!/bin/sh\nexec curl -s -L -o /dev/null \"$1\"\n".write(to: browser, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: browser.path)
        }

        /// Runs the example: `--no-browser` unless `browser`, then `arguments` (a tool call).
        func run(browser useBrowser: Bool = false, _ arguments: [String]) async throws -> TestHelperProcess.Outcome {
            // No --redirect-port: the port is chosen at registration and kept with it, which this
            // server (it compares redirect URIs exactly) accepts.
            var all = [try TestMCPServer.endpoint.absoluteString, tokens.path, "--client-name", name]
            if !useBrowser { all.append("--no-browser") }
            return try await TestHelperProcess.run(
                MCPPythonServerEndToEndTests.example, all + arguments,
                environment: ["BROWSER": useBrowser ? browser.path : "/bin/false"])
        }

        /// The refresh token of the stored session.
        func storedRefreshToken() throws -> String? {
            let files = try FileManager.default.contentsOfDirectory(at: tokens, includingPropertiesForKeys: nil)
                .filter { $0.lastPathComponent.contains("resource") && $0.pathExtension == "json" }
            let file = try #require(files.first, "a stored session")
            let token = try JSONDecoder().decode(OAuthToken.self, from: try Data(contentsOf: file))
            return token.refreshToken
        }
    }

    func signInThenRefresh(name: String, rotates: Bool) async throws {
        let setup = try await Setup(name: name)

        // 1. A fresh process with only the URL: discovery, registration, browser, tools/list, a call.
        let first = try await setup.run(browser: true, ["echo", "text=hello"])
        #expect(first.status == 0)
        #expect(first.output.contains("tools: add, echo"))
        #expect(first.output.contains("echo: hello"))
        var stats = try await TestMCPServer.stats()
        #expect(stats["registered:\(name)"] == 1)
        #expect(stats["authorize:\(name)"] == 1)

        // 2. A second process restores the session: no browser (it would fail), no registration.
        let second = try await setup.run(["add", "a=2", "b=3"])
        #expect(second.status == 0, "restored without a browser")
        #expect(second.output.contains("add: 5"))
        let before = try setup.storedRefreshToken()
        #expect(before != nil)
        // On a loaded machine the second process may already have refreshed (4 s tokens): count
        // from here.
        let refreshes = try await TestMCPServer.stats()["refresh:\(name)"] ?? 0

        // 3. The access token expires (4 s); 8 concurrent calls in a new process: one refresh.
        try await Task.sleep(for: .seconds(5))
        let third = try await setup.run(["--concurrent", "8", "add", "a=20", "b=22"])
        #expect(third.status == 0)
        #expect(third.output.components(separatedBy: "add: 42").count - 1 == 8)
        stats = try await TestMCPServer.stats()
        #expect(stats["refresh:\(name)"] == refreshes + 1, "one refresh for eight concurrent calls")
        #expect(stats["registered:\(name)"] == 1 && stats["authorize:\(name)"] == 1, "no new sign-in")

        // 4. The refresh token is still there: rotated, or kept when the server does not rotate.
        let after = try #require(try setup.storedRefreshToken(), "the refresh token survives the refresh")
        if rotates { #expect(after != before) } else { #expect(after == before) }

        // 5. And it works once more after the next expiry.
        try await Task.sleep(for: .seconds(5))
        let fourth = try await setup.run(["echo", "text=again"])
        #expect(fourth.status == 0)
        #expect(fourth.output.contains("echo: again"))
        stats = try await TestMCPServer.stats()
        #expect(stats["refresh:\(name)"] == refreshes + 2)
        #expect(stats["authorize:\(name)"] == 1, "never the browser again")
    }

    @Test func fromTheURLAloneThenRestoredThenOneRefreshForConcurrentCalls() async throws {
        try await signInThenRefresh(name: "mcp-e2e-\(UUID().uuidString.prefix(8))", rotates: true)
    }

    @Test func aServerThatDoesNotRotateRefreshTokensKeepsTheSessionAlive() async throws {
        try await signInThenRefresh(name: "mcp-e2e-no-rotate-\(UUID().uuidString.prefix(8))", rotates: false)
    }
}

/// `authreq` signs in to an MCP server from its URL (the MCP Python SDK's, with the two settings
/// that server needs), and the token it prints is accepted by the MCP endpoint.
@Suite(.enabled(if: TestMCPServer.isConfigured && TestAuthorizationServer.isConfigured, TestMCPServer.notRunReason))
struct AuthreqMCPEndToEndTests {
    @Test func authreqSignsInToAnMCPServerFromItsURL() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let server = try TestMCPServer.endpoint
        let name = "authreq-mcp-\(UUID().uuidString.prefix(8))"
        let port = try await freeLoopbackPort()
        let added = try await tool.run([
            "profile", "add", "mcp", "--resource", server.absoluteString, "--client-name", name,
            "--redirect-uri", "http://127.0.0.1:\(port)/callback", "--client-id-in-body", "true",
        ])
        #expect(added.status == 0, "\(added.stderr)")
        let login = try await tool.run(["login", "--profile", "mcp"])
        #expect(login.status == 0, "\(login.stderr)")
        #expect(try await TestMCPServer.stats()["authorize:\(name)"] == 1)

        // A new process prints the stored token (refreshed first when it had expired).
        let token = try await tool.run(["token", "--profile", "mcp"])
        let printedAt = Date()
        #expect(token.status == 0, "\(token.stderr)")
        let printed = token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // The server's own record of that token: issued to this client, valid when it was printed.
        // Tokens live 4 s here, so the timing is judged from the server's record, not from how fast
        // a loaded machine gets to the next request.
        let record = try await TestMCPServer.tokenRecord(printed)
        #expect(record.client == name, "a token the server issued to this client")
        #expect(Double(record.expires_at) >= printedAt.timeIntervalSince1970.rounded(.down), "valid when printed")
        var request = URLRequest(url: server)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json, text/event-stream", forHTTPHeaderField: "Accept")
        request.setValue(
            "Bearer \(token.stdout.trimmingCharacters(in: .whitespacesAndNewlines))",
            forHTTPHeaderField: "Authorization")
        request.httpBody = Data(
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"authreq-test","version":"1"}}}"#
                .utf8)
        let sentAt = Date()
        let (data, response) = try await URLSession.shared.data(for: request)
        let after = try await TestMCPServer.tokenRecord(printed)
        if Double(after.expires_at) > sentAt.timeIntervalSince1970 + 1 {
            // Sent with time to spare: the MCP endpoint accepts it.
            #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
            #expect(String(decoding: data, as: UTF8.self).contains("serverInfo"))
            #expect(after.accepted >= 1)
        } else {
            // The machine was slower than the token's 4 s life: the server's log must say so.
            #expect(after.accepted >= 1 || after.refused_expired >= 1, "the endpoint saw the printed token")
        }
    }
}
