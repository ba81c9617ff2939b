import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows

/// The exit statuses of `authreq`, for scripts to branch on (also in `authreq --help` and the
/// README).
package enum ExitStatus {
    /// It worked.
    package static let success: Int32 = 0
    /// Something else failed (the token store could not be read or written, an unexpected error).
    package static let failure: Int32 = 1
    /// No usable session: sign in with `authreq login` (never signed in, signed out, the refresh
    /// token was rejected or expired, the sign-in was denied or timed out).
    package static let needsSignIn: Int32 = 3
    /// The authorization server failed or could not be reached (network, timeout, 5xx, an error
    /// reply other than a rejected grant).
    package static let serverError: Int32 = 4
    /// `fetch` got an answer from the API, and it was an error status (400 or above).
    package static let apiError: Int32 = 5
    /// The command line or the profile is wrong (unknown option, missing setting, an `http` URL
    /// that is not loopback, a client secret file others can read, an assertion file that is
    /// missing, expired, too large or not text). Same as the argument parser's.
    package static let usage: Int32 = 64

    /// The table shown by `authreq --help`.
    package static let help = """
        Exit status: 0 success; 1 other failure (token store); 3 needs sign-in (run authreq login); \
        4 authorization server error or unreachable; 5 the API answered 400 or above (fetch); \
        64 usage or profile error (an assertion file missing, expired or unreadable too).
        """
}

/// A failure `authreq` reports itself: one line for people, and the exit status.
package struct CLIError: Error, CustomStringConvertible, Equatable {
    /// The exit status.
    package let status: Int32
    /// One line, never a secret.
    package let message: String

    package init(_ status: Int32, _ message: String) {
        self.status = status
        self.message = message
    }

    package var description: String { message }

    /// A usage or profile error.
    package static func usage(_ message: String) -> CLIError { CLIError(ExitStatus.usage, message) }
    /// No session.
    package static func needsSignIn(_ message: String) -> CLIError { CLIError(ExitStatus.needsSignIn, message) }
}

/// What an error means for the exit status and the one line shown.
package enum ErrorReport {
    /// The exit status for `error`.
    package static func status(for error: any Error) -> Int32 {
        switch error {
        case let error as CLIError:
            return error.status
        case let error as AuthenticationError:
            switch error.code {
            case .missingCredential, .reauthenticationRequired, .refreshOutcomeUnknown: return ExitStatus.needsSignIn
            case .insecureTransport: return ExitStatus.usage
            case .storeFailed: return ExitStatus.failure
            default: return error.underlyingError.map(status(for:)) ?? ExitStatus.serverError
            }
        case let error as OAuthError:
            switch error.code.rawValue {
            case "invalid_grant", "access_denied", "expired_token": return ExitStatus.needsSignIn
            case "invalid_client", "unauthorized_client", "invalid_scope": return ExitStatus.usage
            default: return ExitStatus.serverError
            }
        case let error as CodeFlowError:
            switch error.code {
            case .timedOut, .browserUnavailable: return ExitStatus.needsSignIn
            case .invalidConfiguration, .insecureAuthorizationEndpoint: return ExitStatus.usage
            default: return ExitStatus.serverError
            }
        case is TokenStoreError:
            return ExitStatus.failure
        case is AssertionError:
            return ExitStatus.usage  // the profile's assertion file: missing, expired, too large
        case is CancellationError:
            return ExitStatus.failure
        default:
            return ExitStatus.serverError
        }
    }

    /// One line for `error`, secrets redacted, and, for a rejected client, where profile
    /// `profile` sets what the server rejected.
    package static func message(for error: any Error, profile: ProfileSettingsHint) -> String {
        let line = message(for: error)
        guard let code = oauthCode(of: error), code == .invalidClient || code == .unauthorizedClient else {
            return line
        }
        return line + " " + profile.clientSettings
    }

    /// The OAuth error code of `error` or of the error it wraps.
    static func oauthCode(of error: any Error) -> OAuthErrorCode? {
        switch error {
        case let error as OAuthError: error.code
        case let error as AuthenticationError: error.underlyingError.flatMap(oauthCode(of:))
        default: nil
        }
    }

    /// One line for `error`, secrets redacted.
    package static func message(for error: any Error) -> String {
        let text: String
        switch error {
        case let error as CLIError:
            text = error.message
        case let error as AuthenticationError:
            let hint =
                status(for: error) == ExitStatus.needsSignIn ? " Run 'authreq login' to sign in." : ""
            text = error.message + (error.underlyingError.map { " (\(message(for: $0)))" } ?? "") + hint
        case let error as CodeFlowError:
            text = error.message
        case let error as HTTPTransportError:
            text = error.message
        case let error as ResourceError where error.code == .transportFailed && error.underlyingError != nil:
            text = error.underlyingError.map(message(for:)) ?? error.description
        case let error as URLError:
            // A transport of the user's own that threw URLSession's error as it was.
            text = HTTPTransportError(HTTPTransportError.code(of: error), sending: nil, underlyingError: error).message
        default:
            text = String(describing: error)
        }
        return Redaction.redact(text.replacingOccurrences(of: "\n", with: " "))
    }
}

/// Where a profile sets its client, for an error that says the server rejected the client.
package struct ProfileSettingsHint: Sendable {
    /// The profile's name.
    let name: String
    /// The client id it sets, if any (a resource profile registers one at sign-in).
    let clientID: String?
    /// The file its secret is read from, if any.
    let secretFile: String?
    /// The environment variable its secret is read from otherwise.
    let secretVariable: String

    /// `Profile 'work' sets client id 'cli' (authreq profile show work) and reads its secret from …`.
    var clientSettings: String {
        let secret = secretFile.map { "the file \($0)" } ?? "$\(secretVariable)"
        let client = clientID.map { "client id '\($0)'" } ?? "a client registered at sign-in"
        return "Profile '\(name)' sets \(client) (authreq profile show \(name)) and reads the client secret from "
            + "\(secret); for private_key_jwt, check its key."
    }
}
