import ArgumentParser
import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import Testing

@testable import AuthreqCLI

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the commands decide without a server: exit statuses, secrets, messages, requests.
@Suite struct CommandTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("authreq-\(UUID().uuidString)")

    func session(_ profile: Profile, environment: [String: String] = [:]) throws -> ProfileSession {
        try ProfileSession(
            name: "p", profile: profile, locations: Locations(environment: ["HOME": folder.path]),
            environment: environment, console: Console(verbose: false))
    }

    // MARK: Exit statuses

    @Test func exitStatusesTellScriptsWhatToDo() {
        let invalidGrant = OAuthError(code: "invalid_grant", errorDescription: "refresh token expired")
        let cases: [(any Error, Int32)] = [
            (AuthenticationError(code: .missingCredential, message: "none"), ExitStatus.needsSignIn),
            (AuthenticationError(code: .reauthenticationRequired, message: "rejected"), ExitStatus.needsSignIn),
            (AuthenticationError(code: .refreshOutcomeUnknown, message: "crashed"), ExitStatus.needsSignIn),
            (
                AuthenticationError(code: .refreshFailed, message: "r", underlyingError: invalidGrant),
                ExitStatus.needsSignIn
            ),
            (
                AuthenticationError(code: .refreshFailed, message: "r", underlyingError: URLError(.timedOut)),
                ExitStatus.serverError
            ),
            (AuthenticationError(code: .insecureTransport, message: "http"), ExitStatus.usage),
            (AuthenticationError(code: .storeFailed, message: "disk"), ExitStatus.failure),
            (OAuthError(code: "access_denied"), ExitStatus.needsSignIn),
            (OAuthError(code: "invalid_client"), ExitStatus.usage),
            (OAuthError(code: "server_error"), ExitStatus.serverError),
            (URLError(.cannotConnectToHost), ExitStatus.serverError),
            (TokenStoreError(code: .ioFailed, key: "k"), ExitStatus.failure),
            (CLIError(ExitStatus.apiError, "404"), ExitStatus.apiError),
        ]
        for (error, status) in cases {
            #expect(ErrorReport.status(for: error) == status, "\(error)")
        }
    }

    /// An assertion file at fault is the profile's to fix (64), not a server failure (4): missing,
    /// not a regular file, too large, and wrapped as the engine reports a failed first grant.
    @Test func anAssertionFileAtFaultIsAProfileError() async throws {
        let context = AuthenticationContext(transport: InMemoryTransport { _ in throw URLError(.badURL) })
        for url in [
            URL(fileURLWithPath: "/nonexistent/token"), URL(fileURLWithPath: "/dev/null").deletingLastPathComponent(),
        ] {
            let error = await #expect(throws: AssertionError.self) {
                _ = try await AssertionSource.file(url).assertion(for: context)
            }
            let failure = try #require(error)
            #expect(ErrorReport.status(for: failure) == ExitStatus.usage, "\(failure)")
            let wrapped = AuthenticationError(code: .obtainFailed, message: "x", underlyingError: failure)
            #expect(ErrorReport.status(for: wrapped) == ExitStatus.usage)
        }
    }

    @Test func statusNamesAnEnterpriseProfilesGrant() throws {
        var profile = Profile(clientID: "agent", issuer: URL(string: "https://auth.example.com"))
        profile.resource = URL(string: "https://api.example.com/mcp")
        profile.enterpriseProfile = "corp"
        profile.grant = .authorizationCode
        let report = StatusReport(session: try session(profile), token: nil, now: Date())
        #expect(String(decoding: try report.json(), as: UTF8.self).contains(#""grant":"enterprise_managed""#))
        #expect(report.text.contains("enterprise_managed"))
    }

    @Test func messagesAreOneLineWithoutSecrets() {
        let error = AuthenticationError(
            code: .refreshFailed, message: "The refresh failed.",
            underlyingError: OAuthError(
                code: "invalid_grant", errorDescription: "refresh_token=abc123 is unknown\nline two"))
        let message = ErrorReport.message(for: error)
        #expect(!message.contains("abc123"))
        #expect(!message.contains("\n"))
        #expect(message.contains("authreq login"), "a rejected refresh tells the user to sign in")
    }

    // MARK: Offline

    @Test func statusAndLogoutNeverAskTheNetwork() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        // An issuer where nothing listens: discovery would fail with "refused", not return nil.
        let profile = Profile(clientID: "cli", issuer: URL(string: "http://127.0.0.1:9/"))
        #expect(try await session(profile).restore(readOnly: true) == nil, "never signed in here: no session")
        await #expect(throws: HTTPTransportError.self) { try await session(profile).restore() }
    }

    @Test func aDPoPProfileProvesAtTheTokenEndpointAndOnEveryRequest() throws {
        var profile = Profile(clientID: "cli", issuer: URL(string: "https://auth.example.com"))
        #expect(try session(profile).context.proofOfPossession == nil)
        profile.dpop = true
        #expect(try session(profile).context.proofOfPossession != nil)
    }

    // MARK: Client secrets

    @Test func aSecretFileOthersCanReadIsRefusedAndAPrivateOneIsRead() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("secret")
        _ = FileManager.default.createFile(
            atPath: file.path, contents: Data("s3cret &+/é\n".utf8), attributes: [.posixPermissions: 0o644])
        var profile = Profile(clientID: "cli", issuer: URL(string: "https://auth.example.com"))
        profile.clientSecretFile = file.path
        let refused = #expect(throws: CLIError.self) { try session(profile).clientSecret() }
        #expect(refused?.message.contains("chmod 600") == true)
        #expect(refused?.message.contains("s3cret") == false)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        #expect(try session(profile).clientSecret() == "s3cret &+/é")
        let client = try session(profile).client()
        #expect(client.methodName == "client_secret_basic")
    }

    /// The client secret file is read as an assertion file is: a pipe is refused, never waited
    /// on; invalid UTF-8 is refused, not sent as replacement characters.
    @Test func aSecretFileThatIsAPipeOrNotTextIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var profile = Profile(clientID: "cli", issuer: URL(string: "https://auth.example.com"))
        let pipe = folder.appendingPathComponent("secret-pipe")
        let fifo = Process()
        fifo.executableURL = URL(fileURLWithPath: "/usr/bin/mkfifo")
        fifo.arguments = ["-m", "600", pipe.path]
        try fifo.run()
        fifo.waitUntilExit()
        profile.clientSecretFile = pipe.path
        let refused = #expect(throws: CLIError.self) { try session(profile).clientSecret() }
        #expect(refused?.message.contains("not a regular file") == true, "\(String(describing: refused))")
        let binary = folder.appendingPathComponent("secret-binary")
        _ = FileManager.default.createFile(
            atPath: binary.path, contents: Data([0x73, 0xFF, 0xFE]), attributes: [.posixPermissions: 0o600])
        profile.clientSecretFile = binary.path
        let notText = #expect(throws: CLIError.self) { try session(profile).clientSecret() }
        #expect(notText?.message.contains("UTF-8") == true)
    }

    @Test func theSecretComesFromTheEnvironmentAndAConfidentialMethodNeedsOne() throws {
        var profile = Profile(clientID: "cli", issuer: URL(string: "https://auth.example.com"))
        #expect(try session(profile).client().methodName == "none")
        #expect(
            try session(profile, environment: ["AUTHREQ_CLIENT_SECRET": "x"]).client().methodName
                == "client_secret_basic")
        profile.clientSecretEnvironment = "MY_SECRET"
        profile.clientAuthentication = .clientSecretPost
        #expect(try session(profile, environment: ["MY_SECRET": "x"]).client().methodName == "client_secret_post")
        let missing = #expect(throws: CLIError.self) { try session(profile).client() }
        #expect(missing?.message.contains("$MY_SECRET") == true)
        #expect(
            try session(profile).client(requiringSecret: false).clientID == "cli", "reading the store needs no secret")
    }

    // MARK: Endpoint cache

    @Test func theEndpointCacheRoundTripsAndRefusesUnsafeOrPartialEntries() throws {
        let endpoints = ServerEndpoints(
            issuer: "https://auth.example.com", authorization: URL(string: "https://auth.example.com/authorize"),
            token: try #require(URL(string: "https://auth.example.com/token")), deviceAuthorization: nil,
            revocation: URL(string: "https://auth.example.com/revoke"), requiresIssuerParameter: true)
        #expect(ServerEndpoints(cached: try endpoints.cached()) == endpoints)
        #expect(
            ServerEndpoints(cached: Data(#"{"token_endpoint":"http://evil.example/token","requires_iss":false}"#.utf8))
                == nil)
        #expect(ServerEndpoints(cached: Data(#"{"token_endpoint":"https://a.example/token"}"#.utf8)) == nil)
        #expect(ServerEndpoints(cached: Data("garbage".utf8)) == nil)
    }

    // MARK: Messages

    @Test func theDeviceCodeIsShownProminentlyWithTheTimeLeft() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let authorization = DeviceAuthorization(
            deviceCode: "device-secret", userCode: "WDJB-MJHT",
            verificationURI: try #require(URL(string: "https://auth.example.com/device")),
            verificationURIComplete: URL(string: "https://auth.example.com/device?user_code=WDJB-MJHT"),
            expiresAt: now.addingTimeInterval(600), interval: 5)
        let text = DeviceCodeMessage.text(for: authorization, now: now)
        #expect(text.contains("enter the code:  WDJB-MJHT"))
        #expect(text.contains("https://auth.example.com/device"))
        #expect(text.contains("expires in 10 min"))
        #expect(!text.contains("device-secret"))
    }

    @Test func durationsAreSpoken() {
        #expect(Duration.spoken(45) == "45 s")
        #expect(Duration.spoken(250) == "4 min 10 s")
        #expect(Duration.spoken(600) == "10 min")
        #expect(Duration.spoken(7500) == "2 h 5 min")
        #expect(Duration.spoken(-3) == "0 s")
    }

    // MARK: Arguments

    @Test func fetchBuildsTheRequestLikeCurl() throws {
        let post = try #require(
            AuthreqCommand.parseAsRoot([
                "fetch", "https://api.example.com/notes", "-d", "text=hi", "-H", "Accept: application/json",
            ]) as? Fetch)
        let request = try post.request()
        #expect(request.httpMethod == "POST")
        #expect(request.httpBody == Data("text=hi".utf8))
        #expect(request.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded")

        let put = try #require(
            AuthreqCommand.parseAsRoot(["fetch", "https://api.example.com/x", "-X", "put", "-i"]) as? Fetch)
        #expect(try put.request().httpMethod == "PUT")
        #expect(put.include)
    }

    @Test func fetchRefusesAnAuthorizationHeaderAndOtherSchemes() {
        #expect(throws: (any Error).self) {
            try AuthreqCommand.parseAsRoot(["fetch", "https://api.example.com/x", "-H", "Authorization: Bearer mine"])
        }
        #expect(throws: (any Error).self) { try AuthreqCommand.parseAsRoot(["fetch", "file:///etc/passwd"]) }
        #expect(throws: (any Error).self) {
            try AuthreqCommand.parseAsRoot(["fetch", "https://x.example", "-H", "no colon"])
        }
        #expect(throws: (any Error).self) {
            try AuthreqCommand.parseAsRoot(["login", "--device", "--client-credentials"])
        }
    }

    @Test func tokenAndStatusOptions() throws {
        let token = try #require(AuthreqCommand.parseAsRoot(["token", "--header", "--profile", "work"]) as? Token)
        #expect(token.header)
        #expect(token.global.profileName == "work")
        let status = try #require(AuthreqCommand.parseAsRoot(["status", "--json"]) as? Status)
        #expect(status.json)
        let json = try #require(AuthreqCommand.parseAsRoot(["token", "--json"]) as? Token)
        #expect(json.json)
    }

    @Test func aRejectedClientSaysWhereTheProfileSetsIt() {
        let rejected = AuthenticationError(
            code: .obtainFailed, message: "Could not obtain a credential; nothing was stored.",
            underlyingError: OAuthError(code: .invalidClient, errorDescription: "bad secret", statusCode: 401))
        let hint = ProfileSettingsHint(
            name: "work", clientID: "cli", secretFile: nil, secretVariable: "AUTHREQ_CLIENT_SECRET")
        let line = ErrorReport.message(for: rejected, profile: hint)
        #expect(line.contains("bad secret"), "the server's words")
        #expect(line.contains("Check the client id and its secret or key"))
        #expect(line.contains("Profile 'work' sets client id 'cli'"), "\(line)")
        #expect(line.contains("$AUTHREQ_CLIENT_SECRET"), "\(line)")
        let other = ErrorReport.message(for: OAuthError(code: .serverError), profile: hint)
        #expect(!other.contains("Profile 'work'"), "only for errors about the client")
    }

    @Test func tokenJSONCarriesTheAccessTokenAndItsExpiryButNeverTheRefreshToken() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = OAuthToken(
            accessToken: "access-1", tokenType: "Bearer", expiresAt: now.addingTimeInterval(90),
            refreshToken: "refresh-secret", scope: "read")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Token.json(of: token, now: now)) as? [String: Any])
        #expect(object["access_token"] as? String == "access-1")
        #expect(object["token_type"] as? String == "Bearer")
        #expect(object["expires_in"] as? Double == 90)
        #expect(object["expires_at"] as? String == "2027-01-15T08:01:30Z")
        #expect(object["scope"] as? String == "read")
        #expect(!String(decoding: try Token.json(of: token, now: now), as: UTF8.self).contains("refresh-secret"))
    }

    @Test func statusOfAResourceProfileNamesTheDiscoveredIssuerAndRegisteredClient() throws {
        var profile = Profile(clientID: "", issuer: nil)
        profile.resource = URL(string: "https://api.example.com/mcp")
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let before = StatusReport(session: try session(profile), token: nil, now: now)
        #expect(String(decoding: try before.json(), as: UTF8.self).contains(#""issuer":null"#), "before any login")
        let report = StatusReport(
            session: try session(profile), token: nil, now: now,
            discovered: ("https://auth.example.com", "registered-client-7"))
        let json = String(decoding: try report.json(), as: UTF8.self)
        #expect(json.contains(#""issuer":"https://auth.example.com""#))
        #expect(json.contains(#""client_id":"registered-client-7""#))
        #expect(report.text.contains("Client:         registered-client-7"))
    }

    @Test func statusShowsNoSecret() throws {
        var profile = Profile(clientID: "cli", issuer: URL(string: "https://auth.example.com"))
        profile.scope = "profile"
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = OAuthToken(
            accessToken: "access-secret", tokenType: "Bearer", expiresAt: now.addingTimeInterval(120),
            refreshToken: "refresh-secret", scope: "profile")
        let report = StatusReport(session: try session(profile), token: token, now: now)
        let json = String(decoding: try report.json(), as: UTF8.self)
        for text in [report.text, json] {
            #expect(!text.contains("access-secret"))
            #expect(!text.contains("refresh-secret"))
        }
        #expect(json.contains(#""has_refresh_token":true"#))
        #expect(json.contains(#""expires_in":120"#))
        #expect(report.text.contains("expires in 2 min"))
        #expect(StatusReport(session: try session(profile), token: nil, now: now).text.contains("Signed in:      no"))
    }
}
