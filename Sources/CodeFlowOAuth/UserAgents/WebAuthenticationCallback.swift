import AuthenticatedRequests
import Foundation

/// Where a web authentication session (`ASWebAuthenticationSession`) returns, derived from the
/// client's redirect URI and checked before anything is shown.
///
/// This is the platform-independent part of `WebAuthenticationSessionUserAgent`: it runs, and is
/// tested, on every platform.
package struct WebAuthenticationCallback: Equatable, Sendable {
    /// How the session recognizes the redirect.
    package enum Kind: Equatable, Sendable {
        /// A private-use URI scheme (RFC 8252 §7.1), e.g. `com.example.app:/oauth`.
        case customScheme(String)
        /// A claimed `https` URL (RFC 8252 §7.2): associated domains on Apple platforms.
        case https(host: String, path: String)
    }

    /// How the session recognizes the redirect.
    package let kind: Kind
    /// The redirect URI the authorization request carries.
    package let redirectURI: URL

    /// Checks `redirectURI` and derives the callback.
    ///
    /// - Throws: ``CodeFlowError/Code/invalidConfiguration`` for a redirect URI the session cannot
    ///   return to, or that RFC 8252 forbids: plain `http` (loopback redirects need
    ///   ``LoopbackUserAgent``), a custom scheme that is not a reverse domain name (it must contain
    ///   a period, §7.1) or that the system handles itself (`file`, `javascript`…), an `https` URL
    ///   without a host or with a port, user information or a fragment.
    package init(redirectURI: URL) throws {
        func invalid(_ why: String) -> CodeFlowError {
            CodeFlowError(
                .invalidConfiguration,
                "The redirect URI \(redirectURI.redactedForDisplay) cannot be used with a web authentication "
                    + "session: \(why)")
        }
        guard let scheme = redirectURI.scheme?.lowercased(), !scheme.isEmpty else {
            throw invalid("it has no scheme.")
        }
        guard redirectURI.fragment == nil else {
            throw invalid("a redirect URI must not have a fragment (RFC 6749 §3.1.2).")
        }
        guard redirectURI.user == nil, redirectURI.password == nil else {
            throw invalid("it carries user information.")
        }
        switch scheme {
        case "https":
            guard let host = redirectURI.host, !host.isEmpty else { throw invalid("an https callback needs a host.") }
            guard redirectURI.port == nil else {
                throw invalid("an https callback is matched by host and path; it cannot name a port.")
            }
            let path = redirectURI.path.isEmpty ? "/" : redirectURI.path
            self.kind = .https(host: host.lowercased(), path: path)
        case "http":
            throw invalid(
                "the session returns only to a custom scheme or https. Loopback redirects "
                    + "(http://127.0.0.1) need LoopbackUserAgent.")
        default:
            guard Self.isSchemeSyntax(scheme) else { throw invalid("'\(scheme)' is not a URI scheme (RFC 3986 §3.1).") }
            guard !Self.reservedSchemes.contains(scheme) else {
                throw invalid("'\(scheme)' is handled by the system, not by the app.")
            }
            guard scheme.contains(".") else {
                throw invalid(
                    "a private-use scheme must be a reverse domain name the app controls, such as "
                        + "com.example.app (RFC 8252 §7.1), so that no other app claims it.")
            }
            self.kind = .customScheme(scheme)
        }
        self.redirectURI = redirectURI
    }

    /// Whether `url`, which the session returned, is a redirect to ``redirectURI``: same scheme,
    /// host and path. (The `state` is checked afterwards, as for every user agent.)
    package func accepts(_ url: URL) -> Bool {
        guard url.scheme?.lowercased() == redirectURI.scheme?.lowercased() else { return false }
        let expectedPath = redirectURI.path.isEmpty ? "/" : redirectURI.path
        let path = url.path.isEmpty ? "/" : url.path
        switch kind {
        case .customScheme:
            return (url.host ?? "").lowercased() == (redirectURI.host ?? "").lowercased() && path == expectedPath
        case .https(let host, _):
            return url.host?.lowercased() == host && url.port == nil && path == expectedPath
        }
    }

    /// `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    static func isSchemeSyntax(_ scheme: String) -> Bool {
        guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else {
            return false
        }
        return scheme.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                    || "+-.".unicodeScalars.contains(scalar))
        }
    }

    /// Schemes the system opens itself, which an app cannot claim.
    static let reservedSchemes: Set<String> = [
        "file", "javascript", "data", "about", "blob", "mailto", "tel", "sms", "facetime", "ftp", "ws", "wss",
    ]
}

/// How a web authentication session ended, in platform-independent terms; the Apple shell
/// translates `ASWebAuthenticationSessionError` into it.
package enum WebAuthenticationSessionEnd: Sendable {
    /// The session returned this URL.
    case callback(URL)
    /// The user closed the sheet or declined the "wants to use … to sign in" prompt
    /// (`canceledLogin`).
    case canceledByUser
    /// The app gave no presentation anchor (`presentationContextNotProvided`).
    case presentationContextNotProvided
    /// The anchor was not a window that can present (`presentationContextInvalid`).
    case presentationContextInvalid
    /// `start()` returned `false`: another session is showing, or the app is not in the
    /// foreground.
    case couldNotStart
    /// Any other error of the session.
    case failed(any Error)

    /// What the user agent returns or throws.
    ///
    /// A user's cancellation is `CancellationError`, as for a cancelled task: the sign-in did
    /// not happen and there is nothing to report. A configuration mistake is
    /// ``CodeFlowError/Code/invalidConfiguration``; a callback to another URL, or a failure of the
    /// session, is ``CodeFlowError/Code/userAgentFailed``.
    package func result(for callback: WebAuthenticationCallback) -> Result<URL, any Error> {
        switch self {
        case .callback(let url):
            guard callback.accepts(url) else {
                return .failure(
                    CodeFlowError(
                        .userAgentFailed,
                        "The web authentication session returned to \(url.redactedForDisplay), not to the "
                            + "redirect URI \(callback.redirectURI.redactedForDisplay)."))
            }
            return .success(url)
        case .canceledByUser:
            return .failure(CancellationError())
        case .presentationContextNotProvided:
            return .failure(
                CodeFlowError(
                    .invalidConfiguration,
                    "The web authentication session needs a presentation anchor (the window to show the "
                        + "sign-in sheet over)."))
        case .presentationContextInvalid:
            return .failure(
                CodeFlowError(
                    .invalidConfiguration,
                    "The presentation anchor cannot present the web authentication session: pass a window "
                        + "that is on screen."))
        case .couldNotStart:
            return .failure(
                CodeFlowError(
                    .userAgentFailed,
                    "The web authentication session did not start: another one is showing, or the app is not "
                        + "in the foreground."))
        case .failed(let error):
            return .failure(
                CodeFlowError(
                    .userAgentFailed,
                    "The web authentication session failed: \(Redaction.redact(String(describing: error)))"))
        }
    }
}
