import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A ``TokenStore`` for command-line tools and servers: one JSON file per key in a folder that
/// only the owner can open.
///
/// - The folder is created with mode `0700`. A folder that already exists is tightened to
///   `0700` when others may read or enter it, and refused (``TokenStoreError/Code/insecureLocation``)
///   when it belongs to another user or is not a folder.
/// - Each file is created with mode `0600` from its first byte (`open` with `O_CREAT|O_EXCL`),
///   written completely, flushed, then renamed over the old file, so a reader never sees a
///   half-written entry and the mode stays `0600`; the folder is flushed after the rename (and
///   after a removal), so a saved entry survives a power cut too. A write that fails (a full
///   disk) removes its temporary file and leaves the old entry as it was.
/// - A file that is not JSON is reported as ``TokenStoreError/Code/corrupt`` and left in place,
///   never replaced silently.
/// - Processes that share the folder coordinate their refreshes (``TokenStore``): the refresh
///   lock of an entry is an exclusive `flock` on a lock file beside it (`<entry>.lock`, mode
///   `0600`, never deleted), which the kernel releases when its holder exits or dies. Use a local
///   file system: `flock` over NFS is not reliable everywhere.
public struct FileTokenStore: TokenStore {
    /// The folder holding the files.
    public let directory: URL

    /// Creates a store in `directory`; the folder is created on first save.
    public init(directory: URL) {
        self.directory = directory
    }

    /// The file for `key`: its characters outside `[A-Za-z0-9._-]` are hex-escaped, so any key
    /// (a URL, an email) gives one safe, distinct file name.
    public func fileURL(forKey key: String) -> URL {
        var name = ""
        for byte in key.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."):
                name.append(Character(Unicode.Scalar(byte)))
            default:
                name += "_" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        if name.hasPrefix(".") { name = "_2E" + name.dropFirst() }
        return directory.appendingPathComponent(name + ".json", isDirectory: false)
    }

    /// Reads the entry for `key`; `nil` when the file does not exist.
    public func load(forKey key: String) async throws -> Data? {
        let url = fileURL(forKey: key)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw TokenStoreError(code: .ioFailed, key: key, path: url.path, underlyingError: error)
        }
        do {
            _ = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw TokenStoreError(code: .corrupt, key: key, path: url.path, underlyingError: error)
        }
        return data
    }

    /// Writes the entry for `key` atomically, with mode `0600`.
    public func save(_ data: Data, forKey key: String) async throws {
        let url = fileURL(forKey: key)
        do {
            try createDirectory(forKey: key)
            let temporary = directory.appendingPathComponent(".\(UUID().uuidString).tmp").path
            do {
                try writeNewFile(atPath: temporary, data: data)
            } catch {
                unlink(temporary)
                throw error
            }
            guard rename(temporary, url.path) == 0 else {
                let error = POSIXError.current
                unlink(temporary)
                throw error
            }
            try syncDirectory()
        } catch let error as TokenStoreError {
            throw error
        } catch {
            throw TokenStoreError(code: .ioFailed, key: key, path: url.path, underlyingError: error)
        }
    }

    /// `true`: processes that share the folder coordinate their refreshes.
    public var coordinatesProcesses: Bool { true }

    /// Runs `body` holding an exclusive `flock` on the entry's lock file; waits at most `timeout`
    /// seconds, polling every few milliseconds.
    public func withRefreshLock<Value: Sendable>(
        forKey key: String,
        timeout: TimeInterval,
        _ body: @Sendable () async throws -> Value
    ) async throws -> Value {
        let path = lockFileURL(forKey: key).path
        let descriptor: Int32
        do {
            try createDirectory(forKey: key)
            descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw POSIXError.current }
        } catch let error as TokenStoreError {
            throw error
        } catch {
            throw TokenStoreError(code: .ioFailed, key: key, path: path, underlyingError: error)
        }
        defer { close(descriptor) }
        let deadline = Date().addingTimeInterval(timeout.isFinite ? Swift.max(timeout, 0) : 0)
        var pause: UInt64 = 1_000_000
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                throw TokenStoreError(code: .ioFailed, key: key, path: path, underlyingError: POSIXError.current)
            }
            guard Date() < deadline else {
                throw TokenStoreError(code: .lockTimedOut, key: key, path: path)
            }
            try await Task.sleep(nanoseconds: pause)
            pause = Swift.min(pause * 2, 50_000_000)
        }
        defer { flock(descriptor, LOCK_UN) }
        return try await body()
    }

    /// The lock file of `key`'s entry.
    public func lockFileURL(forKey key: String) -> URL {
        fileURL(forKey: key).deletingPathExtension().appendingPathExtension("lock")
    }

    /// Deletes the entry for `key`.
    public func removeValue(forKey key: String) async throws {
        let url = fileURL(forKey: key)
        guard unlink(url.path) == 0 else {
            // No entry: nothing was removed, and nothing needs flushing.
            if errno == ENOENT { return }
            throw TokenStoreError(code: .ioFailed, key: key, path: url.path, underlyingError: POSIXError.current)
        }
        do {
            try syncDirectory()
        } catch {
            throw TokenStoreError(code: .ioFailed, key: key, path: url.path, underlyingError: error)
        }
    }

    /// Flushes the folder's list of entries to the disk. The file's own `fsync` keeps its bytes,
    /// not its name: without this, a machine that lost power right after a save could come back
    /// with the entry before it (a rotated, already spent refresh token), or with a removed entry
    /// again. A file system that cannot flush a folder (`EINVAL`) keeps what it can.
    private func syncDirectory() throws {
        let descriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError.current }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 || errno == EINVAL else { throw POSIXError.current }
    }

    private func createDirectory(forKey key: String) throws {
        let path = directory.path
        var info = stat()
        if stat(path, &info) == 0 {
            try checkExisting(info, at: path, key: key)
            return
        }
        guard errno == ENOENT else { throw POSIXError.current }
        try FileManager.default.createDirectory(
            at: directory.deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else { throw POSIXError.current }
        // mkdir's mode is narrowed by the umask, never widened; make it exactly 0700, and check
        // what is there in case another process made it first.
        guard stat(path, &info) == 0 else { throw POSIXError.current }
        try checkExisting(info, at: path, key: key)
    }

    /// Accepts an existing folder only if it is this user's; tightens its mode to `0700`.
    private func checkExisting(_ info: stat, at path: String, key: String) throws {
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw TokenStoreError(
                code: .insecureLocation, key: key, path: path, underlyingError: POSIXError(.ENOTDIR))
        }
        guard info.st_uid == geteuid() else {
            throw TokenStoreError(
                code: .insecureLocation, key: key, path: path,
                underlyingError: POSIXError(.EPERM)
            )
        }
        if info.st_mode & 0o077 != 0 {
            guard chmod(path, 0o700) == 0 else { throw POSIXError.current }
        }
    }

    private func writeNewFile(atPath path: String, data: Data) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError.current }
        defer { close(descriptor) }
        guard fchmod(descriptor, 0o600) == 0 else { throw POSIXError.current }
        try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < buffer.count {
                guard let base = buffer.baseAddress else { break }
                let written = write(descriptor, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw POSIXError.current
                }
                offset += written
            }
        }
        guard fsync(descriptor) == 0 else { throw POSIXError.current }
    }
}

extension POSIXError {
    /// The error for the current `errno`.
    fileprivate static var current: POSIXError {
        POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
