import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 11, item 6: the file store never uses a folder others can read, and a failed write
/// leaves nothing behind and loses nothing.
@Suite struct FileTokenStoreHardeningTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("ar-hardening-\(UUID().uuidString)")

    func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test(arguments: [0o755, 0o777, 0o750, 0o701])
    func anExistingFolderThatOthersCanOpenIsTightenedTo0700(existing: Int) async throws {
        let directory = root.appendingPathComponent("tokens")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        #expect(chmod(directory.path, mode_t(existing)) == 0)
        try await FileTokenStore(directory: directory).save(Data("{}".utf8), forKey: "k")
        #expect(try mode(directory.path) == 0o700)
    }

    @Test func aFolderOfAnotherUserIsRefused() async throws {
        // As root, make a folder that belongs to nobody; as anyone else, /tmp belongs to root.
        let directory: URL
        if geteuid() == 0 {
            directory = root.appendingPathComponent("someone-elses")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            #expect(chown(directory.path, 65_534, 65_534) == 0)
        } else {
            directory = URL(fileURLWithPath: "/tmp")
        }
        defer { try? FileManager.default.removeItem(at: root) }
        let error = await #expect(throws: TokenStoreError.self) {
            try await FileTokenStore(directory: directory).save(Data("{}".utf8), forKey: "k")
        }
        #expect(error?.code == .insecureLocation)
        #expect(error?.key == "k")
    }

    @Test func aPathThatIsAFileIsRefused() async throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let file = root.appendingPathComponent("plain-file")
        try Data().write(to: file)
        await #expect(throws: TokenStoreError.self) {
            try await FileTokenStore(directory: file).save(Data("{}".utf8), forKey: "k")
        }
    }

    @Test func aWriteThatRunsOutOfSpaceKeepsTheOldEntryAndLeavesNoTemporaryFile() async throws {
        let directory = root.appendingPathComponent("tokens")
        defer { try? FileManager.default.removeItem(at: root) }
        let store = FileTokenStore(directory: directory)
        let old = Data(#"{"access_token":"old"}"#.utf8)
        try await store.save(old, forKey: "client@server")
        // A second process writes 1 MB with a file size limit of 64 KiB: the write fails midway.
        let outcome = try await TestHelperProcess.run([
            "store-write", directory.path, "client@server", "1000000", "65536",
        ])
        #expect(outcome.status == 0)
        #expect(outcome.output.contains("failed: input/output failed"), "\(outcome.output)")
        #expect(try await store.load(forKey: "client@server") == old)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files == [store.fileURL(forKey: "client@server").lastPathComponent], "no partial file: \(files)")
    }
}
