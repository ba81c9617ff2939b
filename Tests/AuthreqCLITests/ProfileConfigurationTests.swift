import AuthenticatedRequests
import Foundation
import Testing

@testable import AuthreqCLI

/// The configuration file and its profiles: parsing, every mistake named, where secrets and
/// tokens may go.
@Suite struct ProfileConfigurationTests {
    func parse(_ json: String) throws -> ConfigurationFile {
        try ConfigurationFile(parsing: Data(json.utf8))
    }

    /// The mistake of the file, or else of its one unreadable profile when that is used.
    func usageError(_ json: String) -> CLIError? {
        do {
            let file = try parse(json)
            guard let name = file.unreadableProfiles.keys.first else {
                Issue.record("no mistake found in \(json)")
                return nil
            }
            return #expect(throws: CLIError.self) { try file.profile(name) }
        } catch let error as CLIError {
            return error
        } catch {
            Issue.record("\(error)")
            return nil
        }
    }

    @Test func oneMisspeltKeyNamesItsProfileAndLeavesTheOthersUsableAndIsKeptOnSave() throws {
        let json = #"""
            {"profiles": {"good": {"issuer": "https://a.example.com", "client_id": "a"},
                          "typo": {"issuer": "https://b.example.com", "client_id": "b", "scpoe": "read"}}}
            """#
        var file = try parse(json)
        #expect(try file.profile("good")?.clientID == "a")
        let error = #expect(throws: CLIError.self) { try file.profile("typo") }
        #expect(error?.message.contains("Profile 'typo'") == true)
        #expect(error?.message.contains("'scpoe'") == true)
        #expect(error?.status == ExitStatus.usage)
        // Changing another profile and saving keeps the broken one exactly as written.
        file.profiles["new"] = Profile(clientID: "n", issuer: URL(string: "https://n.example.com"))
        let saved = try ConfigurationFile(parsing: try file.serialized())
        #expect(saved.unreadableProfiles["typo"]?.fields == file.unreadableProfiles["typo"]?.fields)
        #expect(saved.profiles.keys.sorted() == ["good", "new"])
    }

    @Test func dpopAndPARAreSetPerProfileAndRoundTrip() throws {
        let file = try parse(
            #"{"profiles": {"p": {"issuer": "https://a.example.com", "client_id": "a", "dpop": true, "par": false}}}"#)
        let profile = try #require(try file.profile("p"))
        #expect(profile.dpop == true)
        #expect(profile.pushesAuthorizationRequests == false)
        #expect(try ConfigurationFile(parsing: try file.serialized()) == file)
        #expect(
            usageError(#"{"profiles": {"p": {"client_id": "a", "issuer": "https://a", "dpop": "yes"}}}"#)?.message
                .contains("'dpop' must be true or false") == true)
        let endpoints = ServerEndpoints(
            issuer: "https://a.example.com", authorization: nil, token: URL(string: "https://a.example.com/token")!,
            deviceAuthorization: nil, revocation: nil, requiresIssuerParameter: true)
        var pushed = endpoints
        pushed.pushedAuthorization = URL(string: "https://a.example.com/par")
        pushed.requiresPushedAuthorization = true
        #expect(ServerEndpoints(cached: try pushed.cached()) == pushed, "the PAR endpoint is cached too")
    }

    @Test func aWorkloadProfileKeepsItsTokenFileAndGrantAndRoundTrips() throws {
        let file = try parse(
            #"""
            {"profiles": {"job": {"issuer": "https://auth.example.com", "client_id": "reports-job",
                                  "assertion_file": "/var/run/secrets/tokens/reports", "grant": "jwt_bearer"}}}
            """#)
        let job = try #require(file.profiles["job"])
        #expect(job.assertionFile == "/var/run/secrets/tokens/reports")
        #expect(job.grant == .jwtBearer)
        #expect(try ConfigurationFile(parsing: try file.serialized()) == file)
        #expect(
            usageError(#"{"profiles": {"p": {"client_id": "a", "issuer": "https://a", "assertion_file": 3}}}"#)?
                .message.contains("'assertion_file' must be a string") == true)
    }

    @Test func anEnterpriseProfileNamesItsProviderProfileAndRoundTrips() throws {
        let file = try parse(
            #"""
            {"profiles": {"tools": {"resource": "https://tools.example.com/mcp", "issuer": "https://auth.tools.example.com",
                                    "client_id": "agent", "client_secret_env": "TOOLS_SECRET",
                                    "enterprise_profile": "corp"}}}
            """#)
        let tools = try #require(file.profiles["tools"])
        #expect(tools.enterpriseProfile == "corp")
        #expect(try ConfigurationFile(parsing: try file.serialized()) == file)
        try tools.validate(name: "tools")
        var alone = tools
        alone.resource = nil
        #expect(throws: CLIError.self) { try alone.validate(name: "tools") }
        var itself = tools
        itself.enterpriseProfile = "tools"
        let error = #expect(throws: CLIError.self) { try itself.validate(name: "tools") }
        #expect(error?.message.contains("another profile") == true)
    }

    @Test func aFileWrittenByHandReadsAndRoundTrips() throws {
        let file = try parse(
            """
            {"profiles": {
              "work": {"issuer": "https://auth.example.com", "client_id": "cli", "scope": "read write",
                       "client_secret_file": "/srv/secrets/cli.secret", "client_auth": "client_secret_post",
                       "grant": "device_code"},
              "local": {"token_endpoint": "http://127.0.0.1:8080/token", "client_id": "dev",
                        "redirect_uri": "http://127.0.0.1:9000/cb"}
            }}
            """)
        let work = try #require(file.profiles["work"])
        #expect(work.issuer?.absoluteString == "https://auth.example.com")
        #expect(work.clientID == "cli")
        #expect(work.scope == "read write")
        #expect(work.clientAuthentication == .clientSecretPost)
        #expect(work.grant == .deviceCode)
        #expect(file.profiles["local"]?.tokenEndpoint?.port == 8080)
        #expect(try ConfigurationFile(parsing: try file.serialized()) == file)
        #expect(try parse("{}").profiles.isEmpty)
    }

    @Test func everyMistakeIsNamed() {
        #expect(usageError("not json")?.message.contains("not valid JSON") == true)
        #expect(usageError("[1]")?.message.contains("JSON object") == true)
        #expect(usageError(#"{"profile": {}}"#)?.message.contains("unknown key 'profile'") == true)
        #expect(
            usageError(#"{"profiles": {"a": {"client_id": "x", "cliend_secret": "s"}}}"#)?.message.contains(
                "unknown setting 'cliend_secret'") == true)
        #expect(
            usageError(#"{"profiles": {"a": {"issuer": "https://x"}}}"#)?.message.contains("'client_id' is missing")
                == true)
        #expect(usageError(#"{"profiles": {"a": {"client_id": 7}}}"#)?.message.contains("must be a string") == true)
        #expect(
            usageError(#"{"profiles": {"a": {"client_id": "x", "issuer": "not a url"}}}"#)?.message.contains(
                "absolute URL") == true)
        #expect(
            usageError(#"{"profiles": {"a": {"client_id": "x", "grant": "password"}}}"#)?.message.contains(
                "'grant' must be one of") == true)
        #expect(
            usageError(#"{"profiles": {"../etc": {"client_id": "x"}}}"#)?.message.contains("cannot name a profile")
                == true)
        #expect(
            usageError(#"{"profiles": {"a": {"client_id": "x", "client_id": "y"}}}"#) != nil, "a setting named twice")
        #expect(
            usageError(#"{"profiles": {"a": {"client_id": "x", "client_secret": "s"}}}"#)?.message.contains(
                "unknown setting 'client_secret'") == true, "secrets have no place in the file")
    }

    @Test(arguments: [
        ("issuer", "http://auth.example.com"),
        ("token_endpoint", "http://auth.example.com/token"),
        ("authorization_endpoint", "http://10.0.0.1/authorize"),
        ("device_authorization_endpoint", "http://example.com/device"),
        ("revocation_endpoint", "http://127.0.0.1.example.com/revoke"),
    ])
    func plainHTTPToAHostThatIsNotLoopbackIsRefused(key: String, value: String) throws {
        var fields: [String: JSONValue] = [
            "client_id": .string("x"), "token_endpoint": .string("https://a.example/token"),
        ]
        fields[key] = .string(value)
        let profile = try Profile(name: "p", fields: fields)
        let error = #expect(throws: CLIError.self) { try profile.validate(name: "p") }
        #expect(error?.status == ExitStatus.usage)
        #expect(error?.message.contains("not loopback") == true)
    }

    @Test func loopbackHTTPAndHTTPSAreAccepted() throws {
        for issuer in ["https://auth.example.com", "http://127.0.0.1:8080", "http://[::1]:8080", "http://localhost:9"] {
            var profile = Profile(clientID: "x", issuer: URL(string: issuer))
            try profile.validate(name: "p")
            profile.redirectURI = URL(string: "http://127.0.0.1/cb")
            try profile.validate(name: "p")
        }
    }

    @Test func aProfileNeedsAnIssuerOrATokenEndpointAndALoopbackRedirect() {
        #expect(throws: CLIError.self) { try Profile(clientID: "x").validate(name: "p") }
        var profile = Profile(clientID: "x", issuer: URL(string: "https://auth.example.com"))
        profile.redirectURI = URL(string: "https://app.example.com/cb")
        #expect(throws: CLIError.self) { try profile.validate(name: "p") }
    }

    @Test func profileNames() {
        #expect(Profile.isValidName("default"))
        #expect(Profile.isValidName("work-2.prod_eu"))
        #expect(!Profile.isValidName(""))
        #expect(!Profile.isValidName("a/b"))
        #expect(!Profile.isValidName("a b"))
        #expect(!Profile.isValidName(".."))
        #expect(!Profile.isValidName(".hidden"))
        #expect(!Profile.isValidName(String(repeating: "a", count: 65)))
    }

    @Test func theFileIsWrittenWholeAndPrivate() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("authreq-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("authreq/config.json")
        let file = ConfigurationFile(profiles: ["a": Profile(clientID: "x", issuer: URL(string: "https://a.example"))])
        try file.save(to: url)
        try file.save(to: url)
        #expect(try ConfigurationFile.load(from: url) == file)
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        let folderMode =
            try FileManager.default.attributesOfItem(atPath: url.deletingLastPathComponent().path)[.posixPermissions]
            as? NSNumber
        #expect(folderMode?.intValue == 0o700)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path) == ["config.json"]
        )
        #expect(try ConfigurationFile.load(from: folder.appendingPathComponent("missing.json")).profiles.isEmpty)
    }

    @Test func locationsFollowXDGAndIgnoreRelativePaths() {
        let xdg = Locations(environment: ["HOME": "/users/ada", "XDG_CONFIG_HOME": "/cfg", "XDG_STATE_HOME": "/state"])
        #expect(xdg.configurationFile.path == "/cfg/authreq/config.json")
        #expect(xdg.tokensDirectory.path == "/state/authreq/tokens")
        #if os(Linux)
            let defaults = Locations(environment: ["HOME": "/users/ada", "XDG_CONFIG_HOME": "relative"])
            #expect(defaults.configurationFile.path == "/users/ada/.config/authreq/config.json")
            #expect(defaults.tokensDirectory.path == "/users/ada/.local/state/authreq/tokens")
        #endif
    }
}
