import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

@Suite struct FileTokenStoreTests {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("ar-store-\(UUID().uuidString)")
        .appendingPathComponent("tokens")

    func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test func filesAre0600AfterFirstWriteAndAfterARewriteAndTheFolderIs0700() async throws {
        let store = FileTokenStore(directory: directory)
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent()) }
        try await store.save(Data(#"{"access_token":"a"}"#.utf8), forKey: "client@https://auth.example.com")
        let path = store.fileURL(forKey: "client@https://auth.example.com").path
        #expect(try mode(path) == 0o600)
        #expect(try mode(directory.path) == 0o700)
        try await store.save(Data(#"{"access_token":"b"}"#.utf8), forKey: "client@https://auth.example.com")
        #expect(try mode(path) == 0o600)
        #expect(try await store.load(forKey: "client@https://auth.example.com") == Data(#"{"access_token":"b"}"#.utf8))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(leftovers.count == 1, "no temporary file is left behind: \(leftovers)")
    }

    @Test func keysMapToDistinctSafeFileNames() {
        let store = FileTokenStore(directory: directory)
        let a = store.fileURL(forKey: "a/b").lastPathComponent
        let b = store.fileURL(forKey: "a_2Fb").lastPathComponent
        let dots = store.fileURL(forKey: "../etc/passwd").lastPathComponent
        #expect(a != b)
        #expect(!a.contains("/"))
        #expect(!dots.hasPrefix("."))
        #expect(!dots.contains("/"))
    }

    @Test func aMissingEntryIsNilAndRemovingItIsNotAnError() async throws {
        let store = FileTokenStore(directory: directory)
        #expect(try await store.load(forKey: "nobody") == nil)
        try await store.removeValue(forKey: "nobody")
    }

    @Test func aCorruptFileIsAClearErrorAndIsNeverReplaced() async throws {
        let store = FileTokenStore(directory: directory)
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent()) }
        let flow = FakeFlow()
        try await store.save(Data("{}".utf8), forKey: flow.storeKey)
        let path = store.fileURL(forKey: flow.storeKey).path
        try Data("not json at all".utf8).write(to: URL(fileURLWithPath: path))

        let error = await #expect(throws: TokenStoreError.self) { try await store.load(forKey: flow.storeKey) }
        #expect(error?.code == .corrupt)
        #expect(error?.path == path)

        let authenticator = OAuthAuthenticator(flow: flow, store: store)
        let authError = await #expect(throws: AuthenticationError.self) { try await authenticator.validCredential() }
        #expect(authError?.code == .storeFailed)
        #expect(authError?.description.contains("corrupt") == true)
        #expect(flow.obtainCalls == 0, "no new credential silently replaces the corrupt one")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "not json at all")
    }

    @Test func aWellFormedFileThatIsNotACredentialIsAlsoReported() async throws {
        let store = FileTokenStore(directory: directory)
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent()) }
        let flow = FakeFlow()
        try await store.save(Data(#"{"unexpected":true}"#.utf8), forKey: flow.storeKey)
        let authenticator = OAuthAuthenticator(flow: flow, store: store)
        let error = await #expect(throws: AuthenticationError.self) { try await authenticator.validCredential() }
        #expect(error?.code == .storeFailed)
        #expect((error?.underlyingError as? TokenStoreError)?.code == .corrupt)
        #expect(flow.obtainCalls == 0)
    }

    @Test func aCredentialSurvivesARestartThroughTheFileStore() async throws {
        let store = FileTokenStore(directory: directory)
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent()) }
        let flow = FakeFlow()
        let first = OAuthAuthenticator(flow: flow, store: store)
        let token = try await first.validCredential()
        let second = OAuthAuthenticator(flow: flow, store: FileTokenStore(directory: directory))
        let resumed = try await second.validCredential()
        #expect(resumed.accessToken == token.accessToken)
        #expect(resumed.refreshToken == token.refreshToken)
        #expect(abs((resumed.expiresAt ?? .distantPast).timeIntervalSince(token.expiresAt ?? .distantFuture)) < 0.001)
        #expect(flow.obtainCalls == 1)
    }
}
