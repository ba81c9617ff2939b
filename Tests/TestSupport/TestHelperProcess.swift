import Foundation

/// Runs the `authreq-test-helper` executable, built next to the test bundle, as a real separate
/// process.
package enum TestHelperProcess {
    /// The helper's path: the folder of the running test binary.
    package static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("authreq-test-helper")
    }

    /// How a helper run ended.
    package struct Outcome: Sendable {
        /// The exit status, or the signal that ended it.
        package let status: Int32
        /// Whether a signal ended it (e.g. the SIGKILL of a crash test).
        package let wasKilled: Bool
        /// Everything it wrote to standard output.
        package let output: String
        /// Everything it wrote to standard error (also passed on to this process's).
        package var errors: String = ""

        /// The output's last line parsed as a JSON object.
        package var json: [String: Any]? {
            guard let line = output.split(separator: "\n").last else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// Runs the helper with `arguments` (and extra `environment`) and waits for it without
    /// blocking a thread.
    package static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> Outcome {
        try await run(executable, arguments, environment: environment)
    }

    /// Runs `program` with `arguments` and waits for it without blocking a thread.
    package static func run(_ program: URL, _ arguments: [String], environment: [String: String] = [:])
        async throws -> Outcome
    {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("helper-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let errors = output.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errors) }
        let handle = try FileHandle(forWritingTo: output)
        let errorHandle = try FileHandle(forWritingTo: errors)
        let process = Process()
        process.executableURL = program
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = handle
        process.standardError = errorHandle
        let (status, killed) = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<(Int32, Bool), any Error>) in
            process.terminationHandler = { process in
                continuation.resume(
                    returning: (process.terminationStatus, process.terminationReason == .uncaughtSignal))
            }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        try handle.close()
        try errorHandle.close()
        let text = String(decoding: (try? Data(contentsOf: output)) ?? Data(), as: UTF8.self)
        let errorData = (try? Data(contentsOf: errors)) ?? Data()
        FileHandle.standardError.write(errorData)
        return Outcome(
            status: status, wasKilled: killed, output: text, errors: String(decoding: errorData, as: UTF8.self))
    }
}
