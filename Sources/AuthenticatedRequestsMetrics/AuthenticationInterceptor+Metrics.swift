#if Metrics
    import AuthenticatedRequests
    import Foundation
    import Metrics

    extension AuthenticationInterceptor {
        /// Counts what the authenticator does in swift-metrics, from now on: credentials obtained,
        /// loaded, refreshed and cleared, failed refreshes and store failures by code, retried
        /// requests and redirects that left the credential's boundary.
        ///
        /// ```swift
        /// authenticator.recordMetrics()
        /// ```
        ///
        /// One counter, `authreq_authentication_events_total`, with the dimension `event` (the
        /// event's kind: `credential_refreshed`, `refresh_failed`, `store_failed`, …) and, for
        /// failures, `code` (the error's code: `invalid_grant`, `store_unavailable`, …). No
        /// dimension holds a URL, a token or an account. A no-op until the application bootstraps
        /// a metrics backend (`MetricsSystem.bootstrap`). Enable the package trait `Metrics`.
        ///
        /// - Returns: the task that drains the events; cancel it to stop.
        @discardableResult
        public nonisolated func recordMetrics() -> Task<Void, Never> {
            Task {
                for await event in await self.events() {
                    Counter(label: "authreq_authentication_events_total", dimensions: EventLabels.dimensions(of: event))
                        .increment()
                }
            }
        }
    }

    /// The counter's dimensions for an event: bounded sets of values, none secret.
    enum EventLabels {
        /// The counter's dimensions for `event`: its kind and, for a failure, the error's code.
        static func dimensions(of event: AuthenticationEvent) -> [(String, String)] {
            var dimensions = [("event", label(event.kind.description))]
            if let error = event.error { dimensions.append(("code", code(of: error))) }
            return dimensions
        }

        /// An error's code as a label: the OAuth error code, the store's or the authenticator's
        /// code; `other` for any other error.
        static func code(of error: any Error) -> String {
            switch error {
            case let error as AuthenticationError:
                if let oauth = error.underlyingError as? OAuthError { return code(of: oauth) }
                if let store = error.underlyingError as? TokenStoreError { return label(store.code.description) }
                return label(error.code.description)
            case let error as TokenStoreError: return label(error.code.description)
            case let error as OAuthError: return code(of: error)
            default: return "other"
            }
        }

        /// A server's error code when it is a registered one, `other` otherwise: the server
        /// chooses the text, and a label must not grow without bound.
        static func code(of error: OAuthError) -> String {
            registeredErrorCodes.contains(error.code.rawValue) ? error.code.rawValue : "other"
        }

        /// RFC 6749, 6750, 8628, 9449 and OpenID Connect's error codes.
        static let registeredErrorCodes: Set<String> = [
            "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
            "invalid_scope", "access_denied", "server_error", "temporarily_unavailable", "invalid_token",
            "insufficient_scope", "authorization_pending", "slow_down", "expired_token", "invalid_dpop_proof",
            "use_dpop_nonce", "interaction_required", "login_required", "consent_required",
            "invalid_authorization_details", "invalid_target", "transaction_failed", "unknown_user_id",
        ]

        /// `text` in lower snake case, letters and digits only.
        static func label(_ text: String) -> String {
            let words = text.lowercased().split { !($0.isASCII && ($0.isLetter || $0.isNumber)) }
            return words.joined(separator: "_")
        }
    }
#endif
