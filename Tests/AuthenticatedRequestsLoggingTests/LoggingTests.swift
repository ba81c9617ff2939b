#if Logging
    import AuthenticatedRequests
    import AuthenticatedRequestsLogging
    import Foundation
    import Logging
    import TestSupport
    import Testing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// A log handler that keeps every line.
    struct RecordingHandler: LogHandler {
        let lines: Locked<[(Logger.Level, String, Logger.Metadata)]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            lines.withLock { $0.append((event.level, "\(event.message)", event.metadata ?? [:])) }
        }
    }

    /// Issue 14: one line routes the events into swift-log, without secrets.
    @Suite struct LoggingTests {
        @Test func eventsBecomeLogLinesWithoutSecrets() async throws {
            let lines = Locked<[(Logger.Level, String, Logger.Metadata)]>([])
            let logger = Logger(label: "test") { _ in RecordingHandler(lines: lines) }
            let flow = FakeFlow()
            flow.state.withLock { $0.failure = URLError(.timedOut) }
            let api = FakeAPI(valid: [])
            let authenticator = OAuthAuthenticator(
                flow: flow, token: OAuthToken(accessToken: "access-SECRET-0", refreshToken: "refresh-SECRET-0"))
            let logging = authenticator.log(to: logger)
            defer { logging.cancel() }
            #expect(await eventually(100_000) { await authenticator.hasEventObservers })
            await #expect(throws: AuthenticationError.self) {
                try await Me(authenticator: authenticator, transport: api.transport).request()
            }
            await authenticator.clearCredential()
            #expect(await eventually(100_000) { lines.withLock { $0.count >= 2 } })
            let recorded = lines.withLock { $0 }
            #expect(recorded.map(\.0) == [.warning, .info])
            #expect(recorded.first?.2["authentication.event"] == "refresh failed")
            for (_, message, metadata) in recorded {
                #expect(!message.contains("SECRET"))
                #expect(!"\(metadata)".contains("SECRET"))
            }
        }
    }
#endif
