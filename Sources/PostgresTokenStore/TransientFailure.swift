#if PostgreSQL
    import Foundation
    import PostgresNIO

    /// A failed attempt that another attempt may get past: the database full or busy for a
    /// moment, or a connection lost on the way. Anything else (a refused login, a missing
    /// privilege or table, the store's own refusal) ends the operation at once.
    struct TransientFailure: Equatable {
        /// Why, as the metrics label `cause` says it.
        let cause: String
        /// Whether the database (or the pooler in front of it) answered: a busy database is not an
        /// unavailable one, and is tried again until the operation's deadline, while a database
        /// that answers nothing is reported after ``PostgresTokenStore/Configuration/responseTimeout``.
        let answered: Bool

        /// The transient failure `error` is, or `nil` when no retry can help.
        init?(_ error: any Error) {
            guard let found = Self.classify(error) else { return nil }
            self = found
        }

        private init(cause: String, answered: Bool) {
            self.cause = cause
            self.answered = answered
        }

        private static func classify(_ error: any Error) -> TransientFailure? {
            if let error = error as? PostgresTransactionError,
                let inner = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
            {
                return classify(inner)
            }
            guard let error = error as? PSQLError else { return nil }
            if error.code == .server {
                return cause(sqlState: error.serverInfo?[.sqlState] ?? "").map {
                    TransientFailure(cause: $0, answered: true)
                }
            }
            switch error.code {
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown,
                .messageDecodingFailure, .unexpectedBackendMessage:
                return TransientFailure(cause: "connection", answered: false)
            default:
                return nil
            }
        }

        /// The label for a SQLSTATE that means "try again", or `nil`.
        static func cause(sqlState: String) -> String? {
            switch sqlState {
            case "53300": "too_many_connections"
            case "57P01", "57P02", "57P03": "server_restarting"
            case "40001": "serialization_failure"
            case "40P01": "deadlock"
            case _ where sqlState.hasPrefix("08"): "connection"  // PgBouncer's query_wait_timeout is 08P01
            default: nil
            }
        }
    }

    /// The waits between attempts: 50 ms, doubling up to 1 s, each between half and all of that at
    /// random, so that replicas refused together do not come back together.
    struct Backoff {
        private var ceiling: Double = 0.05

        /// The next wait, in seconds.
        mutating func next() -> Double {
            defer { ceiling = min(ceiling * 2, 1) }
            return ceiling * Double.random(in: 0.5...1)
        }
    }
#endif
