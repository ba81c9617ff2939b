import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads an assertion file as ``AssertionSource/file(_:)`` does: a regular file only (a FIFO, a
/// device or a folder is refused at once, never waited on), at most ``limit`` bytes (no more than
/// `limit + 1` are read, whatever the file's size), valid UTF-8 only.
package enum AssertionFile {
    /// The largest assertion file accepted: 64 KiB.
    package static let limit = 64 * 1024

    /// The file's text.
    /// - Throws: ``AssertionError`` ``AssertionError/Code/unreadable``,
    ///   ``AssertionError/Code/notARegularFile``, ``AssertionError/Code/tooLarge`` or
    ///   ``AssertionError/Code/invalidEncoding``; the message names the file, never its content.
    ///
    /// - Parameter what: How messages name the file ("The assertion file" by default; `authreq`
    ///   reads its client secret file the same way).
    package static func read(_ url: URL, limit: Int = limit, what: String = "The assertion file") throws -> String {
        let path = url.path
        // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw AssertionError(
                .unreadable, "\(what) \(path) cannot be read (\(reason)); nothing was sent.")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw AssertionError(.unreadable, "\(what) \(path) cannot be read; nothing was sent.")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw AssertionError(
                .notARegularFile, "\(what) \(path) is not a regular file (a pipe, device or folder); nothing was sent.")
        }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        let count = bytes.withUnsafeMutableBytes { buffer in readUpToEnd(descriptor, into: buffer) }
        guard count >= 0 else {
            throw AssertionError(.unreadable, "\(what) \(path) cannot be read; nothing was sent.")
        }
        guard count <= limit else {
            throw AssertionError(
                .tooLarge, "\(what) \(path) is larger than \(limit / 1024) KiB; nothing was sent.")
        }
        guard let text = String(validating: bytes[..<count], as: UTF8.self) else {
            throw AssertionError(.invalidEncoding, "\(what) \(path) is not valid UTF-8; nothing was sent.")
        }
        return text
    }
}

/// Reads `descriptor` until its end or until `buffer` is full; the count read, or `-1` on an error.
private func readUpToEnd(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
    guard let base = buffer.baseAddress else { return 0 }
    var count = 0
    while count < buffer.count {
        let got = read(descriptor, base + count, buffer.count - count)
        if got == 0 { break }
        if got < 0 {
            if errno == EINTR { continue }
            return -1
        }
        count += got
    }
    return count
}
