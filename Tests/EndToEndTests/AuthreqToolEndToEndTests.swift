import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The built `authreq` tool, run as real processes against the Authlib test server, each test in
/// a home of its own (configuration, tokens, a `$BROWSER` that plays the user).
struct AuthreqTool {
    let home: URL

    init() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("authreq-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        // The browser: fetches the authorization URL and follows its redirects to the loopback
        // receiver, as a browser does after the user approves.
        let browser = """
            #!/usr/bin/env python3
            import sys, urllib.request
            urllib.request.urlopen(sys.argv[1], timeout=30).read()
            """
        _ = FileManager.default.createFile(
            atPath: browserPath, contents: Data(browser.utf8), attributes: [.posixPermissions: 0o700])
    }

    var browserPath: String { home.appendingPathComponent("browser.py").path }
    var configurationFile: URL { home.appendingPathComponent("config/authreq/config.json") }

    static var executable: URL {
        TestHelperProcess.executable.deletingLastPathComponent().appendingPathComponent("authreq")
    }

    func removeHome() { try? FileManager.default.removeItem(at: home) }

    /// How a run ended.
    struct Outcome: Sendable {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// A run in progress.
    final class Running: Sendable {
        let process: Process
        let stderrFile: URL
        let stdoutFile: URL
        let done = OneShot<Int32>()

        init(process: Process, stdoutFile: URL, stderrFile: URL) {
            self.process = process
            self.stdoutFile = stdoutFile
            self.stderrFile = stderrFile
        }

        /// What it wrote to standard error so far.
        var stderrSoFar: String { String(decoding: (try? Data(contentsOf: stderrFile)) ?? Data(), as: UTF8.self) }

        func finish() async throws -> Outcome {
            let status = try await done.value()
            let stdout = String(decoding: (try? Data(contentsOf: stdoutFile)) ?? Data(), as: UTF8.self)
            let outcome = Outcome(status: status, stdout: stdout, stderr: stderrSoFar)
            try? FileManager.default.removeItem(at: stdoutFile)
            try? FileManager.default.removeItem(at: stderrFile)
            return outcome
        }
    }

    func start(_ arguments: [String], environment extra: [String: String] = [:]) throws -> Running {
        let id = UUID().uuidString
        let stdoutFile = home.appendingPathComponent("\(id).out")
        let stderrFile = home.appendingPathComponent("\(id).err")
        _ = FileManager.default.createFile(atPath: stdoutFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        for name in ["AUTHREQ_PROFILE", "AUTHREQ_CLIENT_SECRET", "XDG_CONFIG_HOME", "XDG_STATE_HOME"] {
            environment[name] = nil
        }
        environment["HOME"] = home.path
        environment["XDG_CONFIG_HOME"] = home.appendingPathComponent("config").path
        environment["XDG_STATE_HOME"] = home.appendingPathComponent("state").path
        environment["BROWSER"] = browserPath
        process.environment = environment.merging(extra) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: stdoutFile)
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        let running = Running(process: process, stdoutFile: stdoutFile, stderrFile: stderrFile)
        process.terminationHandler = { running.done.finish(with: .success($0.terminationStatus)) }
        try process.run()
        return running
    }

    func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> Outcome {
        try await start(arguments, environment: environment).finish()
    }

    /// Adds the default profile for `client` at the test server.
    func addProfile(_ client: TestAuthorizationServer.Client, name: String = "default") async throws {
        let added = try await run([
            "profile", "add", name, "--issuer", try TestAuthorizationServer.base.absoluteString,
            "--client-id", client.id, "--scope", "profile",
        ])
        #expect(added.status == 0, "\(added.stderr)")
    }

    /// Signs the default profile in through the browser.
    func browserLogin() async throws {
        let login = try await run(["login"])
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stdout.isEmpty, "login writes nothing to standard output")
        #expect(login.stderr.contains("Signed in: profile 'default'"))
        #expect(login.stderr.contains("open this URL:\n\n    http"), "the URL it opened is shown: \(login.stderr)")
    }
}

/// `authreq` end to end: every sign-in, tokens in new processes, refresh after expiry, one
/// refresh for twenty processes, sign-out, and the refusal of plain-http servers.
@Suite(.enabled(if: TestAuthorizationServer.isConfigured, TestAuthorizationServer.notRunReason))
struct AuthreqToolEndToEndTests {
    /// The exit statuses the README documents.
    enum Exit {
        static let needsSignIn: Int32 = 3
        static let usage: Int32 = 64
    }

    @Test func browserLoginThenATokenInANewProcessThenFetchAfterExpiryRefreshesOnce() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        // 10 s tokens: long enough for the first checks on a busy machine (they are refreshed
        // in their last 2.5 s), short enough to wait for.
        let client = try await TestAuthorizationServer.makeClient(public: true, accessTokenLifetime: 10)
        try await tool.addProfile(client)
        try await tool.browserLogin()

        let first = try await tool.run(["token"])
        #expect(first.status == 0, "\(first.stderr)")
        let token = first.stdout.trimmingCharacters(in: .newlines)
        #expect(!token.isEmpty && !token.contains("\n"), "one line: the token, nothing else")
        #expect(try await tool.run(["token"]).stdout == first.stdout, "a valid token is reused, not refreshed")
        #expect(try await TestAuthorizationServer.tokenRequests(client) == ["authorization_code": 1])

        let header = try await tool.run(["token", "--header"])
        #expect(header.stdout == "Authorization: Bearer \(token)\n")

        let status = try await tool.run(["status", "--json"])
        let expiresIn = try #require(
            (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["expires_in"]
                as? Double)
        try await Task.sleep(for: .seconds(expiresIn + 0.5))  // expired
        let fetched = try await tool.run([
            "fetch", "--verbose", try TestAuthorizationServer.base.appendingPathComponent("api/me").absoluteString,
        ])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(fetched.stdout.contains("Ada Lovelace"))
        #expect(fetched.stderr.contains("credential refreshed"), "--verbose reports the refresh: \(fetched.stderr)")
        #expect(
            try await TestAuthorizationServer.tokenRequests(client) == ["authorization_code": 1, "refresh_token": 1])

        let after = try await tool.run(["status", "--json"])
        #expect(after.status == 0)
        let json = try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [String: Any]
        #expect(json?["signed_in"] as? Bool == true)
        #expect(json?["client_id"] as? String == client.id)
        #expect(json?["has_refresh_token"] as? Bool == true)
        #expect(!after.stdout.contains(token))
    }

    @Test func withoutABrowserTheURLIsPrintedAndTheSignInKeepsWaiting() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let client = try await TestAuthorizationServer.makeClient(public: true, accessTokenLifetime: 60)
        try await tool.addProfile(client)
        let login = try tool.start(["login"], environment: ["BROWSER": "/nonexistent/browser"])
        var printed: URL?
        for _ in 0..<100 where printed == nil {
            printed = login.stderrSoFar.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("http://127.0.0.1") && $0.contains("/authorize?") }.flatMap(URL.init(string:))
            if printed == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let url = try #require(printed, "the URL to open by hand: \(login.stderrSoFar)")
        // The user opens it later, by hand; the loopback receiver is still waiting.
        try await Task.sleep(for: .milliseconds(500))
        _ = try await URLSession.shared.data(from: url)
        let outcome = try await login.finish()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("Could not open a browser"))
        #expect(try await tool.run(["token"]).status == 0)
    }

    @Test func verboseDetailsAreRedactedAndCompletionsAreGenerated() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let client = try await TestAuthorizationServer.makeClient(public: true, accessTokenLifetime: 60)
        try await tool.addProfile(client)
        try await tool.browserLogin()
        let token = try await tool.run(["token"]).stdout.trimmingCharacters(in: .newlines)
        let fetched = try await tool.run([
            "fetch", "--verbose", "-i",
            try TestAuthorizationServer.base.appendingPathComponent("api/me").absoluteString,
        ])
        #expect(fetched.status == 0)
        #expect(fetched.stderr.contains("authreq: GET"), "verbose explains the steps")
        #expect(!fetched.stderr.contains(token) && !fetched.stdout.contains(token), "and never shows the token")
        #expect(fetched.stdout.hasPrefix("HTTP/1.1 200"))
        for shell in ["bash", "zsh", "fish"] {
            let script = try await tool.run(["--generate-completion-script", shell])
            #expect(script.status == 0)
            #expect(script.stdout.contains("login") && script.stdout.contains("fetch"), "\(shell)")
        }
    }

    @Test func deviceLoginWithTheTestApprovingTheCodeThenATokenInANewProcess() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let client = try await TestAuthorizationServer.makeClient(accessTokenLifetime: 60)
        let secret = ["AUTHREQ_CLIENT_SECRET": try #require(client.secret)]
        let login = try tool.start(
            [
                "login", "--device", "--issuer", try TestAuthorizationServer.base.absoluteString, "--client-id",
                client.id,
                "--scope", "profile",
            ], environment: secret)
        var userCode: String?
        for _ in 0..<100 where userCode == nil {
            userCode = login.stderrSoFar.split(separator: "\n").first { $0.contains("enter the code:") }
                .flatMap { $0.split(separator: " ").last.map(String.init) }
            if userCode == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let code = try #require(userCode, "the user code is shown: \(login.stderrSoFar)")
        #expect(login.stderrSoFar.contains("/device"), "with the verification URL")
        #expect(login.stderrSoFar.contains("expires in"), "and the time left")
        try await TestAuthorizationServer.decideDevice(userCode: code, approve: true)
        let outcome = try await login.finish()
        #expect(outcome.status == 0, "\(outcome.stderr)")

        let token = try await tool.run(["token"], environment: secret)
        #expect(token.status == 0, "\(token.stderr)")
        #expect(!token.stdout.isEmpty)
        let counts = try await TestAuthorizationServer.tokenRequests(client)
        #expect(
            counts == [
                "urn:ietf:params:oauth:grant-type:device_code": counts["urn:ietf:params:oauth:grant-type:device_code"]
                    ?? 0
            ])
        #expect((counts["urn:ietf:params:oauth:grant-type:device_code"] ?? 0) >= 1, "no other grant: no new sign-in")
    }

    @Test func clientCredentialsLoginWithASecretFileThenATokenInANewProcess() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let client = try await TestAuthorizationServer.makeClient(accessTokenLifetime: 60)
        let secret = try #require(client.secret)
        let secretFile = tool.home.appendingPathComponent("secret")
        _ = FileManager.default.createFile(
            atPath: secretFile.path, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: 0o600])
        let login = try await tool.run([
            "login", "--client-credentials", "--profile", "svc", "--issuer",
            try TestAuthorizationServer.base.absoluteString,
            "--client-id", client.id, "--client-secret-file", secretFile.path,
        ])
        #expect(login.status == 0, "\(login.stderr)")
        let token = try await tool.run(["token", "--profile", "svc"])
        #expect(token.status == 0, "\(token.stderr)")
        #expect(try await TestAuthorizationServer.tokenRequests(client) == ["client_credentials": 1])

        let status = try await tool.run(["status", "--profile", "svc", "--json"])
        #expect(status.stdout.contains(#""grant":"client_credentials""#))
        let configuration = try String(contentsOf: tool.configurationFile, encoding: .utf8)
        for text in [status.stdout, status.stderr, configuration] {
            #expect(!text.contains(secret), "the secret appears nowhere")
            #expect(!text.contains(token.stdout.trimmingCharacters(in: .newlines)))
        }
    }

    @Test func twentyConcurrentTokenCommandsAtExpiryMakeOneTokenRequest() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        // 40 s tokens are refreshed in their last 10 s (a quarter): the twenty processes start in
        // that window and have the refreshed token's 30 s before it enters its own (12 s tokens
        // left 9 s, and twenty processes on a loaded machine once needed more: a second refresh).
        let client = try await TestAuthorizationServer.makeClient(public: true, accessTokenLifetime: 40)
        try await tool.addProfile(client)
        try await tool.browserLogin()
        let original = try await tool.run(["token"]).stdout
        let status = try await tool.run(["status", "--json"])
        let expiresIn = try #require(
            (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["expires_in"]
                as? Double)
        // Start them when about 8 s are left: inside the refresh window, before expiry.
        try await Task.sleep(for: .seconds(max(0, expiresIn - 8.2)))

        let outcomes = try await withThrowingTaskGroup(of: AuthreqTool.Outcome.self) { group in
            for _ in 0..<20 { group.addTask { try await tool.run(["token"]) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0.status == 0 }, "\(outcomes.filter { $0.status != 0 }.map(\.stderr))")
        #expect(Set(outcomes.map(\.stdout)).count == 1, "every process printed the same token")
        #expect(outcomes.first?.stdout != original, "the token was refreshed")
        let counts = try await TestAuthorizationServer.tokenRequests(client)
        #expect(counts["refresh_token"] == 1, "one token request for twenty processes: \(counts)")
        #expect(counts["invalid_grant"] == nil)
    }

    @Test func logoutRevokesAndDeletesThenTokenNeedsSignIn() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let client = try await TestAuthorizationServer.makeClient(public: true)
        try await tool.addProfile(client)
        try await tool.browserLogin()
        let token = try await tool.run(["token"]).stdout.trimmingCharacters(in: .newlines)

        let logout = try await tool.run(["logout"])
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(logout.stderr.contains("revoked"))
        let after = try await tool.run(["token"])
        #expect(after.status == Exit.needsSignIn)
        #expect(after.stdout.isEmpty)
        #expect(after.stderr.contains("authreq login"))
        #expect(try await tool.run(["status"]).status == Exit.needsSignIn)

        var request = URLRequest(url: try TestAuthorizationServer.base.appendingPathComponent("api/me"))
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 401, "the server revoked the token")
    }

    @Test func aProfileNamingAPlainHTTPServerThatIsNotLoopbackIsRefused() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let added = try await tool.run([
            "profile", "add", "remote", "--issuer", "http://auth.example.com", "--client-id", "c",
        ])
        #expect(added.status == Exit.usage)
        #expect(added.stderr.contains("not loopback"))
        #expect(!FileManager.default.fileExists(atPath: tool.configurationFile.path), "nothing was saved")

        let login = try await tool.run(["login", "--issuer", "http://203.0.113.7", "--client-id", "c"])
        #expect(login.status == Exit.usage)

        // Written by hand: refused when used, before any request.
        try FileManager.default.createDirectory(
            at: tool.configurationFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(#"{"profiles":{"remote":{"client_id":"c","token_endpoint":"http://auth.example.com/token"}}}"#.utf8)
            .write(to: tool.configurationFile)
        let token = try await tool.run(["token", "--profile", "remote"])
        #expect(token.status == Exit.usage)
        #expect(token.stderr.contains("http://auth.example.com/token"))
        #expect(token.stdout.isEmpty)
    }
}
