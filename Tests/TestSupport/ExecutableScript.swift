import Foundation

/// Writes an executable script without this process ever holding it open for writing.
///
/// Written here and then run, a script can fail to start with `ETXTBSY` ("exited with 126"): a
/// process another test spawns at that moment inherits the write descriptor until it execs, and
/// Linux refuses to run a file open for writing. A child `sh` writes it instead, so no descriptor
/// of this process ever refers to it for writing.
package enum ExecutableScript {
    package static func write(_ text: String, to url: URL) throws {
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", #"printf '%s' "$1" > "$2" && chmod 755 "$2""#, "sh", text, url.path]
        try writer.run()
        writer.waitUntilExit()
        guard writer.terminationStatus == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
    }
}
