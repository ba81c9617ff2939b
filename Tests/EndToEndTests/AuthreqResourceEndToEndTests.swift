import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `authreq login --resource`: from nothing but a protected resource's URL, in real processes
/// against the Authlib test server: discovery from its 401, one dynamic registration per issuer
/// for every process of a home, the browser sign-in for the resource, and refreshes that name it.
@Suite(.enabled(if: TestAuthorizationServer.isConfigured, TestAuthorizationServer.notRunReason))
struct AuthreqResourceEndToEndTests {
    func registrations(_ name: String) async throws -> Int {
        try await TestAuthorizationServer.json("test/stats/registered:\(name)")["register"] as? Int ?? 0
    }

    func grants(for resource: URL) async throws -> [String: Int] {
        try await TestAuthorizationServer.json("test/stats/resource:\(resource.absoluteString)")
            .compactMapValues { $0 as? Int }
    }

    @Test func loginFromTheURLAloneThenNewProcessesReuseTheRegistrationAndTheSession() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        // Tokens of 12 s: a refreshed one (3 s of leeway) must still be valid when a process on a
        // loaded machine sends it; 4 s failed once under the full suite.
        let resource = try TestResource.make(tokenLifetime: 12)
        let name = "cli-\(UUID().uuidString)"

        let login = try await tool.run(["login", "--resource", resource.absoluteString, "--client-name", name])
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stderr.contains("Signed in: profile 'default' for \(resource.absoluteString)"), "\(login.stderr)")
        let unreserved = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let encoded = resource.absoluteString.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
        #expect(login.stderr.contains("resource=\(encoded)"), "the authorization request names the resource")
        #expect(try await registrations(name) == 1)
        let configuration = try String(contentsOf: tool.configurationFile, encoding: .utf8)
        #expect(configuration.contains(#""resource""#) && !configuration.contains(#""client_id""#))

        // A new process: the stored registration and session, no browser, no registration.
        let fetch = try await tool.run(["fetch", resource.appendingPathComponent("notes").absoluteString])
        #expect(fetch.status == 0, "\(fetch.stderr)")
        #expect(fetch.stdout.contains(#""resource":"\#(resource.absoluteString)""#), "\(fetch.stdout)")
        #expect(try await registrations(name) == 1, "0 new registrations")
        #expect(try await grants(for: resource)["authorization_code"] == 1, "no new sign-in")

        // After expiry (this resource's tokens live 12 s), the refresh names the resource. (On a
        // loaded machine the first fetch may already have refreshed: count from here.)
        let refreshes = try await grants(for: resource)["refresh_token"] ?? 0
        try await Task.sleep(for: .seconds(13))
        let later = try await tool.run(["fetch", resource.absoluteString])
        #expect(later.status == 0, "\(later.stderr)")
        #expect(try await grants(for: resource)["refresh_token"] == refreshes + 1)
        let status = try await tool.run(["status", "--json"])
        #expect(status.stdout.contains(#""resource":"\#(resource.absoluteString)""#), "\(status.stdout)")

        // Sign-out revokes at the server the metadata named and deletes the session; the
        // registration stays (it is the client's, not the user's).
        let logout = try await tool.run(["logout"])
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(logout.stderr.contains("revoked and deleted"), "\(logout.stderr)")
        let after = try await tool.run(["status"])
        #expect(after.status == AuthreqToolEndToEndTests.Exit.needsSignIn)
        #expect(try await registrations(name) == 1)
    }

    @Test func eightProcessesSigningInAtOnceRegisterOnce() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let resource = try TestResource.make()
        let name = "cli-\(UUID().uuidString)"
        let added = try await tool.run([
            "profile", "add", "default", "--resource", resource.absoluteString, "--client-name", name,
        ])
        #expect(added.status == 0, "\(added.stderr)")

        let runs = try (0..<8).map { _ in try tool.start(["login"]) }
        var outcomes: [AuthreqTool.Outcome] = []
        for run in runs { outcomes.append(try await run.finish()) }
        for outcome in outcomes { #expect(outcome.status == 0, "\(outcome.stderr)") }
        #expect(try await registrations(name) == 1, "one registration for eight processes")
        let seen = try await TestAuthorizationServer.json("test/stats/rs:\(resource.lastPathComponent)")
        #expect(seen.keys.filter { $0.hasPrefix("client:") }.count <= 1)
        let fetch = try await tool.run(["fetch", resource.absoluteString])
        #expect(fetch.status == 0, "\(fetch.stderr)")
    }

    @Test func fetchingAnUnknownProtectedResourceOffersItsSignIn() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let resource = try TestResource.make()
        let fetch = try await tool.run(["fetch", resource.appendingPathComponent("notes").absoluteString])
        #expect(fetch.status == AuthreqToolEndToEndTests.Exit.needsSignIn)
        #expect(fetch.stderr.contains("authreq login --resource \(resource.absoluteString)"), "\(fetch.stderr)")

        // Signed in with another profile, the offer names the resource too.
        let login = try await tool.run(["login", "--resource", resource.absoluteString, "--client-name", "offer"])
        #expect(login.status == 0, "\(login.stderr)")
        let other = try await tool.run(["fetch", "--profile", "other", resource.absoluteString])
        #expect(other.status == AuthreqToolEndToEndTests.Exit.needsSignIn, "\(other.stderr)")
        #expect(other.stderr.contains("--resource \(resource.absoluteString)"))
    }

    @Test func aResourceWhoseServerLacksAMatchingResourceIsRefusedWithNothingSignedIn() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        // The test server's metadata for /rs/<tag> names <issuer>/rs/<tag>: a URL below it is
        // another resource, and RFC 9728 §3.3 refuses the mismatch.
        let resource = try TestResource.make().appendingPathComponent("deeper")
        let login = try await tool.run([
            "login", "--resource", resource.absoluteString, "--client-name", "cli-\(UUID().uuidString)",
        ])
        #expect(login.status != 0)
        #expect(login.stderr.contains("resource"), "\(login.stderr)")
        #expect(!login.stderr.contains("Signed in"))
    }
}
