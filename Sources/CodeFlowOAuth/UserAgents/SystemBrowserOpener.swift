import Foundation

#if os(macOS) || os(Linux)
    /// The system browser: `open` on macOS; `$BROWSER` (the first entry of a `:`-separated list),
    /// else `xdg-open`, on Linux.
    ///
    /// The command must return once the browser has the URL (as `open` and `xdg-open` do).
    ///
    /// Available on macOS and Linux only: it runs a command with Foundation's `Process`, which iOS,
    /// tvOS, watchOS and visionOS do not have. Apps there sign in with
    /// `WebAuthenticationSessionUserAgent` or ``CustomSchemeUserAgent``.
    public struct SystemBrowserOpener: BrowserOpener {
        private let environment: [String: String]

        /// Creates an opener that reads `BROWSER` from `environment` (the process's by default).
        public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
            self.environment = environment
        }

        /// The command and arguments that open `url`.
        func command(for url: URL) -> [String] {
            #if os(macOS)
                return ["open", url.absoluteString]
            #else
                if let browser = environment["BROWSER"]?.split(separator: ":").first.map(String.init), !browser.isEmpty
                {
                    return browser.contains("%s")
                        ? browser.replacingOccurrences(of: "%s", with: url.absoluteString).split(separator: " ").map(
                            String.init)
                        : [browser, url.absoluteString]
                }
                return ["xdg-open", url.absoluteString]
            #endif
        }

        /// Runs the command and waits for it; a missing command or a non-zero exit is
        /// ``CodeFlowError/Code/browserUnavailable``.
        ///
        /// Only `https` and `http` URLs with a host are opened: a `file:`, `javascript:` or other URL
        /// is refused before any command runs. (``CodeFlowManager`` refuses plain `http` to a host
        /// other than loopback before it gets here.)
        public func open(_ url: URL) async throws {
            guard let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", url.host != nil else {
                throw CodeFlowError(
                    .insecureAuthorizationEndpoint,
                    "Refusing to open \(url.redactedForDisplay) in a browser: only https and http URLs are opened."
                )
            }
            let arguments = command(for: url)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            let status: Int32 = try await withCheckedThrowingContinuation { continuation in
                process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
                do {
                    try process.run()
                } catch {
                    process.terminationHandler = nil
                    continuation.resume(throwing: error)
                }
            }
            guard status == 0 else {
                throw CodeFlowError(
                    .browserUnavailable,
                    "Could not open a browser (\(arguments.first ?? "?") exited with \(status)). "
                        + "Open this URL yourself to continue: \(url.absoluteString)"
                )
            }
        }
    }
#endif
