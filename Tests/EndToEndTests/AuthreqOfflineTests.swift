import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The built `authreq` tool, as real processes, where no server is needed: its version, and what
/// it says when the server is down.
@Suite struct AuthreqOfflineTests {
    @Test func versionPrintsTheChangelogsNewestVersion() async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let outcome = try await tool.run(["--version"])
        #expect(outcome.status == 0)
        let version = outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let changelog = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "../../CHANGELOG.md"), encoding: .utf8)
        let newest = changelog.split(separator: "\n").first { $0.hasPrefix("## ") }.map(String.init) ?? ""
        #expect(version.hasPrefix("1."), "\(version)")
        let number = version.split(separator: "-").first.map(String.init) ?? version
        #expect(newest.contains(number), "CHANGELOG.md's newest heading (\(newest)) names \(version)")
        #expect(version.contains("unreleased") == newest.contains("Unreleased"))
    }

    @Test(arguments: [["login"], ["login", "--device"], ["token"]])
    func aServerThatIsDownIsOneSentenceAndExitStatus4(arguments: [String]) async throws {
        let tool = try AuthreqTool()
        defer { tool.removeHome() }
        let refusing = try RefusingPort()
        let port = refusing.port
        let added = try await tool.run([
            "profile", "add", "default", "--issuer", "http://127.0.0.1:\(port)", "--client-id", "cli",
        ])
        #expect(added.status == 0, "\(added.stderr)")
        let outcome = try await tool.run(arguments)
        let lines = outcome.stderr.split(separator: "\n")
        #expect(outcome.status == 4, "\(outcome.stderr)")
        #expect(lines.count == 1, "one sentence: \(outcome.stderr)")
        let line = String(lines.first ?? "")
        #expect(line.contains("127.0.0.1:\(port)") && line.contains("refused"), "\(line)")
        for noise in ["Error Domain", "<redacted>", "UserInfo", "NSURLErrorDomain Code"] {
            #expect(!line.contains(noise), "\(line)")
        }
        withExtendedLifetime(refusing) {}
    }
}
