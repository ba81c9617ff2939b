#if Metrics
    import AuthenticatedRequests
    import AuthenticatedRequestsMetrics
    import Foundation
    import InMemoryTracing
    import MetricsTestKit
    import TestSupport
    import Testing
    import Tracing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The authenticator's events as swift-metrics counters, and token requests as spans, in the
    /// in-memory backends: names, values, and no token, secret or assertion in any label or
    /// attribute.
    @Suite struct AuthenticationMetricsTests {
        @Test func eventsAreCountedByKindAndCodeWithoutSecrets() async throws {
            let metrics = InMemoryObservability.metrics
            let before = metrics.counters(
                label: "authreq_authentication_events_total",
                dimensions: [("event", "refresh_failed"), ("code", "invalid_grant")]
            ).map(\.totalValue).reduce(0, +)
            let flow = FakeFlow()
            flow.state.withLock {
                $0.failure = OAuthError(code: "invalid_grant", errorDescription: "refresh-SECRET-0 was revoked")
            }
            let authenticator = OAuthAuthenticator(
                flow: flow, token: OAuthToken(accessToken: "access-SECRET-0", refreshToken: "refresh-SECRET-0"))
            let recording = authenticator.recordMetrics()
            defer { recording.cancel() }
            #expect(await eventually(100_000) { await authenticator.hasEventObservers })
            await #expect(throws: AuthenticationError.self) {
                try await Me(authenticator: authenticator, transport: FakeAPI(valid: []).transport).request()
            }
            await authenticator.clearCredential()
            #expect(
                await eventually(100_000) {
                    metrics.counters(
                        label: "authreq_authentication_events_total",
                        dimensions: [("event", "refresh_failed"), ("code", "invalid_grant")]
                    ).map(\.totalValue).reduce(0, +) == before + 1
                })
            #expect(
                await eventually(100_000) {
                    !metrics.counters(
                        label: "authreq_authentication_events_total", dimensions: [("event", "credential_cleared")]
                    ).isEmpty
                })
            for counter in metrics.counters(label: "authreq_authentication_events_total") {
                #expect(!"\(counter.dimensions)".contains("SECRET"))
            }
        }

        /// A server's own error code becomes `other`: it must not grow the label's values.
        @Test func unregisteredErrorCodesAreOther() async throws {
            let metrics = InMemoryObservability.metrics
            let flow = FakeFlow()
            flow.state.withLock { $0.failure = OAuthError(code: OAuthErrorCode(rawValue: "x_\(UUID().uuidString)")) }
            let authenticator = OAuthAuthenticator(flow: flow, token: OAuthToken(accessToken: "a", refreshToken: "r"))
            let recording = authenticator.recordMetrics()
            defer { recording.cancel() }
            #expect(await eventually(100_000) { await authenticator.hasEventObservers })
            let before = metrics.counters(
                label: "authreq_authentication_events_total",
                dimensions: [("event", "refresh_failed"), ("code", "other")]
            ).map(\.totalValue).reduce(0, +)
            await #expect(throws: AuthenticationError.self) {
                try await Me(authenticator: authenticator, transport: FakeAPI(valid: []).transport).request()
            }
            #expect(
                await eventually(100_000) {
                    metrics.counters(
                        label: "authreq_authentication_events_total",
                        dimensions: [("event", "refresh_failed"), ("code", "other")]
                    ).map(\.totalValue).reduce(0, +) == before + 1
                })
            #expect(!metrics.counters.contains { "\($0.dimensions)".contains("x_") })
        }

        /// A token request through `TracingTransport`: one span, named after the method, with the
        /// host, port, path and status; not the body (the refresh token, the client's assertion),
        /// the query or the headers.
        @Test func tokenRequestsAreSpansWithoutSecrets() async throws {
            let tracer = InMemoryObservability.tracer
            let path = "/token-\(UUID().uuidString)"
            let server = InMemoryTransport { request in
                try InMemoryTransport.reply(
                    to: request, json: #"{"access_token":"access-SECRET-1","token_type":"Bearer","expires_in":3600}"#)
            }
            let transport = TracingTransport(server)
            var request = URLRequest(url: URL(string: "https://auth.example.com:8443\(path)?code=code-SECRET")!)
            request.httpMethod = "POST"
            request.setValue("Basic Y2xpZW50OnNlY3JldC1TRUNSRVQ=", forHTTPHeaderField: "Authorization")
            request.httpBody = Data(
                "grant_type=refresh_token&refresh_token=refresh-SECRET-0&client_assertion=eyJ-SECRET".utf8)
            let (_, head) = try await transport.send(request)
            #expect(head.statusCode == 200)
            let spans = tracer.finishedSpans.filter {
                $0.attributes["url.path"]?.toSpanAttribute() == .string(path)
            }
            let span = try #require(spans.first)
            #expect(spans.count == 1)
            #expect(span.operationName == "HTTP POST")
            #expect(span.kind == .client)
            #expect(span.attributes["http.request.method"]?.toSpanAttribute() == .string("POST"))
            #expect(span.attributes["server.address"]?.toSpanAttribute() == .string("auth.example.com"))
            #expect(span.attributes["server.port"]?.toSpanAttribute() == .int64(8443))
            #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
            var shown: [String] = [span.operationName]
            span.attributes.forEach { name, value in shown.append("\(name)=\(value)") }
            #expect(!shown.contains { $0.contains("SECRET") || $0.contains("Y2xpZW50") }, "\(shown)")
        }

        /// A transport failure: the span's status is an error named by the error's type, without its
        /// description (a `URLError` carries the URL, and so the query).
        @Test func aFailedRequestIsAnErrorSpanWithoutItsDescription() async throws {
            let tracer = InMemoryObservability.tracer
            let path = "/failing-\(UUID().uuidString)"
            let transport = TracingTransport(InMemoryTransport { _ in throw URLError(.timedOut) })
            let request = URLRequest(url: URL(string: "https://auth.example.com\(path)?state=state-SECRET")!)
            await #expect(throws: URLError.self) { try await transport.send(request) }
            let span = try #require(
                tracer.finishedSpans.first { $0.attributes["url.path"]?.toSpanAttribute() == .string(path) })
            #expect(span.status?.code == .error)
            #expect(span.attributes["error.type"]?.toSpanAttribute() == .string("URLError"))
            #expect(span.errors.isEmpty, "the error itself is not recorded")
        }
    }
#endif
