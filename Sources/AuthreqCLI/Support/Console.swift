import Foundation

/// Where `authreq` writes: results to standard output, everything for people to standard error.
package struct Console: Sendable {
    /// Whether `--verbose` was given.
    package let verbose: Bool

    package init(verbose: Bool) {
        self.verbose = verbose
    }

    /// Writes `data` to standard output: the command's result, nothing else.
    package func output(_ data: Data) {
        FileHandle.standardOutput.write(data)
    }

    /// Writes a line to standard output.
    package func output(line: String) {
        output(Data((line + "\n").utf8))
    }

    /// A message for people, on standard error.
    package func message(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// A detail shown with `--verbose`, on standard error; the text must already be redacted.
    package func detail(_ text: @autoclosure () -> String) {
        if verbose { message("authreq: " + text()) }
    }
}
