#if os(macOS) || os(Linux)
    // SwiftNIO, which the receiver listens with, is a dependency on macOS and Linux only
    // (Package.swift): apps on iOS, tvOS, watchOS and visionOS build no SwiftNIO.
    import AuthenticatedRequests
    import Foundation

    /// The user agent for native and command-line apps (RFC 8252 §7.3): opens the system browser and
    /// receives the redirect on `http://127.0.0.1:<ephemeral port><path>`.
    ///
    /// Register `http://127.0.0.1/callback` (any port) as the client's redirect URI. If no browser can
    /// be opened, ``onBrowserUnavailable`` is told (with the URL to show the user) and the flow keeps
    /// waiting until the timeout.
    ///
    /// Any local process can connect to the receiver, so it trusts none of them: only the redirect
    /// that carries the `state` of the authorization request ends the flow (others get an error page
    /// while the receiver keeps waiting), every connection gets one response and is closed, idle
    /// connections are closed after 5 seconds, at most 16 are open at once (a new one closes the
    /// oldest), and none outlives the flow. It answers a `POST` only for a flow that asked for a signed
    /// response as a form (``SignedResponseMode/formPostJWT``).
    public struct LoopbackUserAgent: AuthorizationUserAgent {
        /// Opens the authorization URL.
        public let opener: any BrowserOpener
        /// How long to wait for the redirect, in seconds.
        public let timeout: TimeInterval
        /// Called when the browser could not be opened; by default writes the error, which includes
        /// the URL to open by hand, to standard error.
        public let onBrowserUnavailable: @Sendable (URL, any Error) -> Void
        /// Called once the browser was asked to open the authorization page, with what the sign-in
        /// now waits for (``Waiting``); by default says so on standard error. `nil` says nothing.
        public let onWaiting: (@Sendable (Waiting) -> Void)?

        /// What a sign-in waits for: the browser to come back to ``redirectURI`` from the
        /// authorization server at ``authorizationServer``, for at most ``timeout`` seconds. No
        /// secret: not the authorization URL (its `state`), only its origin.
        public struct Waiting: Sendable, CustomStringConvertible {
            /// The redirect URI listened on, port included.
            public let redirectURI: URL
            /// The origin of the authorization page (`https://auth.example.com`).
            public let authorizationServer: String
            /// How long the sign-in waits, in seconds.
            public let timeout: TimeInterval

            /// `Waiting up to 300 s for the browser to return from https://auth.example.com to http://127.0.0.1:49152/callback.`
            public var description: String {
                "Waiting up to \(Int(timeout.rounded())) s for the browser to return from \(authorizationServer) to "
                    + "\(redirectURI.absoluteString)."
            }
        }

        /// Creates the agent with the browser opener of your choice.
        ///
        /// - Parameters:
        ///   - opener: Opens the authorization URL.
        ///   - timeout: How long to wait for the redirect, in seconds.
        ///   - onBrowserUnavailable: Told when `opener` fails, with the URL to show the user; the
        ///     flow keeps waiting. By default the message goes to standard error.
        ///   - onWaiting: Told what the sign-in waits for once the browser was asked to open; by
        ///     default the line goes to standard error. `nil` says nothing.
        public init(
            opener: any BrowserOpener,
            timeout: TimeInterval = 300,
            onBrowserUnavailable: @escaping @Sendable (URL, any Error) -> Void = LoopbackUserAgent
                .reportToStandardError,
            onWaiting: (@Sendable (Waiting) -> Void)? = LoopbackUserAgent.reportWaitingToStandardError
        ) {
            self.opener = opener
            self.timeout = timeout
            self.onBrowserUnavailable = onBrowserUnavailable
            self.onWaiting = onWaiting
        }

        #if os(macOS) || os(Linux)
            /// Creates the agent with the system browser (``SystemBrowserOpener``): macOS and Linux.
            ///
            /// - Parameters:
            ///   - timeout: How long to wait for the redirect, in seconds.
            ///   - onBrowserUnavailable: Told when no browser opens, with the URL to show the user;
            ///     the flow keeps waiting. By default the message goes to standard error.
            ///   - onWaiting: Told what the sign-in waits for once the browser was asked to open;
            ///     by default the line goes to standard error. `nil` says nothing.
            public init(
                timeout: TimeInterval = 300,
                onBrowserUnavailable: @escaping @Sendable (URL, any Error) -> Void = LoopbackUserAgent
                    .reportToStandardError,
                onWaiting: (@Sendable (Waiting) -> Void)? = LoopbackUserAgent.reportWaitingToStandardError
            ) {
                self.init(
                    opener: SystemBrowserOpener(), timeout: timeout, onBrowserUnavailable: onBrowserUnavailable,
                    onWaiting: onWaiting)
            }
        #endif

        /// Writes the error, which includes the URL to open by hand, to standard error.
        public static let reportToStandardError: @Sendable (URL, any Error) -> Void = { url, error in
            let text =
                (error as? CodeFlowError)?.message ?? "Could not open a browser (\(error)). Open this URL: \(url)"
            FileHandle.standardError.write(Data((text + "\n").utf8))
        }

        /// Writes what the sign-in waits for to standard error.
        public static let reportWaitingToStandardError: @Sendable (Waiting) -> Void = { waiting in
            FileHandle.standardError.write(Data((waiting.description + "\n").utf8))
        }

        /// Listens on a loopback port: an ephemeral one (RFC 8252 §7.3: the server must accept any
        /// port) unless `redirectURI` names a port, for servers that compare redirect URIs exactly
        /// (the MCP Python SDK's, for one). The session's redirect URI keeps the path of
        /// `redirectURI` and carries the port.
        public func begin(redirectURI: URL) async throws -> any AuthorizationUserAgentSession {
            let path = redirectURI.path.isEmpty ? "/" : redirectURI.path
            let receiver = try await LoopbackRedirectReceiver.start(path: path, port: redirectURI.port ?? 0)
            return Session(receiver: receiver, agent: self)
        }

        private struct Session: AuthorizationUserAgentSession {
            let receiver: LoopbackRedirectReceiver
            let agent: LoopbackUserAgent

            var redirectURI: URL { receiver.redirectURI }

            func present(_ authorizationURL: URL) async throws -> URL {
                guard let state = RedirectState.state(of: authorizationURL) else {
                    throw CodeFlowError(
                        .invalidConfiguration,
                        "The authorization URL has no state, so no redirect could be told from a forged one."
                    )
                }
                return try await present(authorizationURL, state: state)
            }

            func present(_ authorizationURL: URL, state: String) async throws -> URL {
                receiver.expect(state: state)
                let agent = self.agent
                // The opener runs beside the wait, so a browser command that blocks cannot hold the
                // flow. It is not cancelled when the redirect arrives: it finishes on its own, and
                // cancelling a URLSession-based opener at the moment its request completes can
                // deadlock swift-corelibs-foundation (seen on Linux with Swift 6.3.1).
                let waiting = Waiting(
                    redirectURI: redirectURI, authorizationServer: Origin(authorizationURL)?.display ?? "the server",
                    timeout: agent.timeout)
                Task {
                    do {
                        try await agent.opener.open(authorizationURL)
                        agent.onWaiting?(waiting)
                    } catch is CancellationError {
                    } catch {
                        agent.onBrowserUnavailable(authorizationURL, error)
                    }
                }
                return try await receiver.waitForRedirect(timeout: agent.timeout)
            }

            /// Receives the query modes, and `form_post.jwt` as a `POST` accepted for this flow only;
            /// a browser never sends a fragment to a server, so `fragment.jwt` is refused.
            func receiveSignedResponse(in mode: SignedResponseMode) throws {
                switch mode {
                case .jwt, .queryJWT: return
                case .formPostJWT: receiver.acceptFormPost()
                case .fragmentJWT:
                    throw CodeFlowError(
                        .invalidConfiguration,
                        "A browser does not send a redirect's fragment to the loopback receiver, so a "
                            + "response_mode=fragment.jwt response cannot arrive; ask for query.jwt or form_post.jwt. "
                            + "Nothing was sent.")
                default:
                    throw CodeFlowError(
                        .invalidConfiguration,
                        "The loopback receiver cannot receive a response_mode=\(mode) response; nothing was sent.")
                }
            }

            func close() async {
                await receiver.close()
            }
        }
    }
#endif
