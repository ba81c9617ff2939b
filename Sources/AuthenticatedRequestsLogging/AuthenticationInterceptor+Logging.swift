#if Logging
    import AuthenticatedRequests
    import Foundation
    import Logging

    extension AuthenticationInterceptor {
        /// Routes what the authenticator does into `logger`, from now on: one line per event,
        /// with secrets redacted (the event's own description, which never holds one).
        ///
        /// ```swift
        /// authenticator.log(to: Logger(label: "com.example.api.auth"))
        /// ```
        ///
        /// Credentials obtained, loaded, refreshed and cleared are `info`; retries are `debug`;
        /// failed refreshes and store failures are `warning`. Each line carries the metadata
        /// `authentication.event`, and `authentication.url` or `authentication.error` where
        /// there is one. Enable the package trait `Logging` to build this module; the core does
        /// not depend on swift-log.
        ///
        /// - Returns: the task that drains the events; cancel it to stop logging.
        @discardableResult
        public nonisolated func log(to logger: Logger) -> Task<Void, Never> {
            Task {
                for await event in await self.events() {
                    let (level, metadata) = Self.logLine(for: event)
                    logger.log(level: level, "\(event.description)", metadata: metadata)
                }
            }
        }

        static func logLine(for event: AuthenticationEvent) -> (Logger.Level, Logger.Metadata) {
            var metadata: Logger.Metadata = ["authentication.event": "\(event.kind)"]
            if let url = event.url { metadata["authentication.url"] = "\(url)" }
            if event.error != nil {
                // The description is redacted as a whole; the raw error is not logged.
                metadata["authentication.error"] = "\(event.description)"
            }
            switch event.kind {
            case .refreshFailed, .storeFailed: return (.warning, metadata)
            case .requestRetried: return (.debug, metadata)
            default: return (.info, metadata)
            }
        }
    }
#endif
