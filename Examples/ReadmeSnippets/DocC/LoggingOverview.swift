#if Logging
import AuthenticatedRequests
import AuthenticatedRequestsLogging
import Logging

/// Every event of `authenticator` as a swift-log line, secrets redacted; cancel the task to stop.
func logEvents(of authenticator: OAuthAuthenticator) -> Task<Void, Never> {
    authenticator.log(to: Logger(label: "auth"))
}
#endif
