#if canImport(AuthenticationServices) && (os(iOS) || os(macOS) || os(visionOS))
    import AuthenticatedRequests
    import AuthenticationServices
    import Foundation

    /// The user agent for apps on iOS, Mac Catalyst, visionOS and macOS: the system's web
    /// authentication session (`ASWebAuthenticationSession`), the sign-in sheet Apple recommends
    /// (RFC 8252 §8.12: an in-app browser tab, never a web view).
    ///
    /// The redirect URI is a private-use scheme (`com.example.app:/oauth`) or, on iOS 17.4,
    /// macOS 14.4 and visionOS 1.1 and later, an `https` URL of a domain associated with the app.
    /// The app does not register the scheme or handle the URL: the session catches it.
    ///
    /// ```swift
    /// let manager = CodeFlowManager(
    ///     configuration: configuration,  // redirectURI: com.example.app:/oauth
    ///     userAgent: WebAuthenticationSessionUserAgent(prefersEphemeralWebBrowserSession: true) {
    ///         view.window!  // the window to show the sheet over
    ///     })
    /// ```
    ///
    /// Closing the sheet, or declining the system's "wants to use … to sign in" prompt, ends the
    /// sign-in with `CancellationError`. This type is a thin layer over Apple's API; the checks it
    /// relies on (which redirect URIs work, which returned URL is the redirect, how the session's
    /// errors map) are platform-independent code tested on every platform.
    public struct WebAuthenticationSessionUserAgent: AuthorizationUserAgent {
        /// Whether the session keeps no cookies of the user's browser and leaves none behind: no
        /// single sign-on with the browser, and no "wants to use … to sign in" prompt.
        public let prefersEphemeralWebBrowserSession: Bool
        /// The window to show the sheet over; `nil` lets the system pick one.
        public let presentationAnchor: (@MainActor @Sendable () -> ASPresentationAnchor)?

        /// Creates the agent.
        ///
        /// - Parameters:
        ///   - prefersEphemeralWebBrowserSession: Share no cookies with the browser.
        ///   - presentationAnchor: Returns the window to show the sheet over, on the main actor. On
        ///     macOS and in apps with several windows, pass it; otherwise the system picks one.
        public init(
            prefersEphemeralWebBrowserSession: Bool = false,
            presentationAnchor: (@MainActor @Sendable () -> ASPresentationAnchor)? = nil
        ) {
            self.prefersEphemeralWebBrowserSession = prefersEphemeralWebBrowserSession
            self.presentationAnchor = presentationAnchor
        }

        /// Checks that the session can return to `redirectURI` (kept as is) and prepares it.
        ///
        /// - Throws: ``CodeFlowError/Code/invalidConfiguration`` for a redirect URI the session
        ///   cannot return to (plain `http`, a scheme that is not a reverse domain name, an `https`
        ///   URL on a system that does not support https callbacks).
        public func begin(redirectURI: URL) async throws -> any AuthorizationUserAgentSession {
            let callback = try WebAuthenticationCallback(redirectURI: redirectURI)
            let runner = await Runner(
                callback: callback,
                prefersEphemeral: prefersEphemeralWebBrowserSession,
                anchor: presentationAnchor
            )
            return Session(callback: callback, runner: runner)
        }

        private struct Session: AuthorizationUserAgentSession {
            let callback: WebAuthenticationCallback
            let runner: Runner

            var redirectURI: URL { callback.redirectURI }

            func present(_ authorizationURL: URL) async throws -> URL {
                let end = OneShot<WebAuthenticationSessionEnd>()
                try await runner.start(authorizationURL, reportingTo: end)
                let outcome = try await withTaskCancellationHandler {
                    try await end.value()
                } onCancel: {
                    Task { @MainActor in runner.cancel() }
                }
                return try outcome.result(for: callback).get()
            }

            func close() async {
                await runner.cancel()
            }
        }

        /// Owns the `ASWebAuthenticationSession` (which must stay referenced while it shows) and
        /// is its presentation context, on the main actor as Apple's API requires.
        ///
        /// The conformance to `ASWebAuthenticationPresentationContextProviding` is
        /// `@preconcurrency` (SE-0423): SDKs that declare `presentationAnchor(for:)` without
        /// `@MainActor` would otherwise refuse a main-actor method as its witness ("main
        /// actor-isolated instance method cannot satisfy nonisolated requirement"); with it, the
        /// witness is checked at run time to be called on the main thread, which is where
        /// AuthenticationServices calls it. SDKs that do declare `@MainActor` accept it as it is.
        @MainActor
        fileprivate final class Runner: NSObject {
            private let callback: WebAuthenticationCallback
            private let prefersEphemeral: Bool
            private let anchor: (@MainActor @Sendable () -> ASPresentationAnchor)?
            private var session: ASWebAuthenticationSession?
            private var cancelled = false

            init(
                callback: WebAuthenticationCallback,
                prefersEphemeral: Bool,
                anchor: (@MainActor @Sendable () -> ASPresentationAnchor)?
            ) {
                self.callback = callback
                self.prefersEphemeral = prefersEphemeral
                self.anchor = anchor
            }

            func start(_ url: URL, reportingTo end: OneShot<WebAuthenticationSessionEnd>) throws {
                guard !cancelled else { throw CancellationError() }
                // The handler only hands the outcome over, so it may run on any thread.
                let completion: @Sendable (URL?, (any Error)?) -> Void = { url, error in
                    end.finish(with: .success(Self.end(url: url, error: error)))
                }
                let session = try makeSession(url, completion: completion)
                session.prefersEphemeralWebBrowserSession = prefersEphemeral
                session.presentationContextProvider = self
                self.session = session
                if !session.start() {
                    self.session = nil
                    end.finish(with: .success(.couldNotStart))
                }
            }

            private func makeSession(
                _ url: URL, completion: @escaping @Sendable (URL?, (any Error)?) -> Void
            ) throws -> ASWebAuthenticationSession {
                switch callback.kind {
                case .customScheme(let scheme):
                    if #available(iOS 17.4, macOS 14.4, visionOS 1.1, *) {
                        return ASWebAuthenticationSession(
                            url: url, callback: .customScheme(scheme), completionHandler: completion)
                    }
                    return ASWebAuthenticationSession(
                        url: url, callbackURLScheme: scheme, completionHandler: completion)
                case .https(let host, let path):
                    if #available(iOS 17.4, macOS 14.4, visionOS 1.1, *) {
                        return ASWebAuthenticationSession(
                            url: url, callback: .https(host: host, path: path), completionHandler: completion)
                    }
                    throw CodeFlowError(
                        .invalidConfiguration,
                        "https redirect URIs need iOS 17.4, macOS 14.4 or visionOS 1.1; use a private-use "
                            + "scheme (com.example.app:/oauth) on earlier systems.")
                }
            }

            func cancel() {
                cancelled = true
                session?.cancel()
                session = nil
            }

            /// Apple's outcome in the package's terms.
            nonisolated static func end(url: URL?, error: (any Error)?) -> WebAuthenticationSessionEnd {
                if let url, error == nil { return .callback(url) }
                switch (error as? ASWebAuthenticationSessionError)?.code {
                case .canceledLogin: return .canceledByUser
                case .presentationContextNotProvided: return .presentationContextNotProvided
                case .presentationContextInvalid: return .presentationContextInvalid
                default:
                    return .failed(
                        error
                            ?? CodeFlowError(.userAgentFailed, "The session ended with neither a URL nor an error."))
                }
            }
        }
    }

    extension WebAuthenticationSessionUserAgent.Runner: @preconcurrency ASWebAuthenticationPresentationContextProviding
    {
        func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor {
            anchor?() ?? ASPresentationAnchor()
        }
    }
#endif
