import Foundation

/// Runs the `authreq-test-helper` executable, built next to the test bundle, as a real second
/// process.
package enum TestHelperProcess {
    /// The helper's path: the folder of the running test binary.
    package static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("authreq-test-helper")
    }

    /// Runs the helper with `arguments`; returns its exit status and standard output.
    package static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
