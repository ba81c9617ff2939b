#if PostgreSQL
    import AuthenticatedRequests
    import Foundation
    import PostgresNIO
    @testable import PostgresTokenStore
    import Testing

    /// What the store tries again, and what it reports at once: without a database.
    @Suite struct TransientFailureTests {
        @Test(arguments: [
            ("53300", "too_many_connections"), ("57P01", "server_restarting"), ("57P02", "server_restarting"),
            ("57P03", "server_restarting"), ("40001", "serialization_failure"), ("40P01", "deadlock"),
            ("08000", "connection"), ("08003", "connection"), ("08006", "connection"), ("08001", "connection"),
            ("08004", "connection"), ("08P01", "connection"),
        ])
        func busyStatesAreTriedAgainByCause(sqlState: String, cause: String) {
            #expect(TransientFailure.cause(sqlState: sqlState) == cause)
            #expect(PostgresTokenStore.configurationProblem(sqlState: sqlState) == nil)
        }

        @Test(arguments: [
            "28P01", "28000", "42501", "42P01", "42703", "3F000", "3D000", "23505", "22001", "42601", "XX000", "",
        ])
        func otherStatesAreNotTriedAgain(sqlState: String) {
            #expect(TransientFailure.cause(sqlState: sqlState) == nil)
        }

        @Test(arguments: ["28P01", "28000", "42501", "42P01", "42703", "3F000", "3D000"])
        func configurationStatesSayWhatToFix(sqlState: String) throws {
            let fix = try #require(PostgresTokenStore.configurationProblem(sqlState: sqlState))
            #expect(fix.count > 20)
        }

        /// Errors that are not the server's answer: a lost connection is tried again, a
        /// disagreement on TLS or authentication is a configuration error, anything else neither.
        @Test func connectionErrorsAreTriedAgainAndAuthenticationMismatchesAreNot() {
            for code in [PSQLError.Code.connectionError, .serverClosedConnection, .uncleanShutdown] {
                #expect(PostgresTokenStore.isConfigurationFailure(code) == false)
            }
            for code in [
                PSQLError.Code.sslUnsupported, .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError,
            ] {
                #expect(PostgresTokenStore.isConfigurationFailure(code))
            }
            #expect(TransientFailure(CancellationError()) == nil)
            #expect(TransientFailure(URLError(.timedOut)) == nil)
        }

        /// 50 ms, doubling to 1 s, each between half and all of that: never zero, never over 1 s,
        /// and spread.
        @Test func backoffDoublesToOneSecondWithJitter() {
            var backoff = Backoff()
            let waits = (0..<10).map { _ in backoff.next() }
            let ceilings = [0.05, 0.1, 0.2, 0.4, 0.8, 1, 1, 1, 1, 1]
            for (wait, ceiling) in zip(waits, ceilings) {
                #expect(wait >= ceiling / 2 && wait <= ceiling, "\(wait) for \(ceiling)")
            }
            let spread = Set(
                (0..<20).map { _ in
                    var fresh = Backoff()
                    return fresh.next()
                })
            #expect(spread.count > 1, "jittered")
        }

        /// Settings no fleet can work with are refused when the store is made, saying what to set.
        @Test(arguments: [
            PostgresTokenStore.Configuration(maximumConnections: 1),
            PostgresTokenStore.Configuration(operationTimeout: 0),
            PostgresTokenStore.Configuration(responseTimeout: -1),
            PostgresTokenStore.Configuration(leaseDuration: .infinity),
            PostgresTokenStore.Configuration(connectionIdleTimeout: .nan),
        ])
        func settingsThatCannotWorkAreRefused(configuration: PostgresTokenStore.Configuration) throws {
            let error = #expect(throws: TokenStoreError.self) {
                _ = try PostgresTokenStore(
                    connection: .init(host: "127.0.0.1", username: "u", password: nil, database: "d", tls: .disable),
                    key: TokenEncryptionKey.random(id: "k"), configuration: configuration)
            }
            #expect(error?.code == .misconfigured)
            #expect("\(String(describing: error))".contains("Set") || "\(String(describing: error))".contains("set"))
        }
    }
#endif
