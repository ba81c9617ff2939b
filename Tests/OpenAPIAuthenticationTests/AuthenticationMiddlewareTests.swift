#if OpenAPI
    import AuthenticatedRequests
    import DPoP
    import Foundation
    import HTTPTypes
    import OpenAPIAuthentication
    import OpenAPIRuntime
    import Testing
    import TestSupport

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The middleware's rules, in memory: `FakeAPI` plays the resource server behind
    /// `HTTPTransportClient`, `FakeFlow` the authorization server.
    @Suite struct AuthenticationMiddlewareTests {
        let flow = FakeFlow()
        let api = FakeAPI(valid: ["access-1"])
        let bodies = Locked<[Data?]>([])
        let baseURL = URL(string: "https://api.example.com/v1")!

        func makeAuthenticator() -> OAuthAuthenticator {
            OAuthAuthenticator(flow: flow, store: InMemoryTokenStore())
        }

        /// The rest of the chain: records each body that reaches the server, then `FakeAPI`.
        var next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?) {
            let api = api
            let bodies = bodies
            let recording = InMemoryTransport { request in
                bodies.withLock { $0.append(request.httpBody) }
                return try await api.transport.send(request)
            }
            return { request, body, baseURL in
                try await HTTPTransportClient(recording).send(request, body: body, baseURL: baseURL, operationID: "op")
            }
        }

        func post(_ body: HTTPBody?, through middleware: AuthenticationMiddleware<BearerTokenAuthenticator>)
            async throws -> HTTPResponse
        {
            var request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/notes?draft=1")
            request.headerFields[.contentType] = "application/json"
            return try await middleware.intercept(
                request, body: body, baseURL: baseURL, operationID: "createNote", next: next
            ).0
        }

        @Test func aCallCarriesTheCredentialAndKeepsItsPathQueryAndHeaders() async throws {
            let middleware = AuthenticationMiddleware(authenticator: makeAuthenticator())
            let seen = Locked<String?>(nil)
            var request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/me?fields=name")
            request.headerFields[.accept] = "application/json"
            let (response, _) = try await middleware.intercept(
                request, body: nil, baseURL: baseURL, operationID: "getMe"
            ) { request, body, baseURL in
                seen.withLock { $0 = baseURL.absoluteString + (request.path ?? "") }
                #expect(request.headerFields[.authorization] == "Bearer access-1")
                #expect(request.headerFields[.accept] == "application/json")
                #expect(request.path == "/me?fields=name")
                return (HTTPResponse(status: .ok), nil)
            }
            #expect(response.status == .ok)
            #expect(seen.withLock { $0 } == "https://api.example.com/v1/me?fields=name")
            #expect(flow.obtainCalls == 1)
        }

        @Test func aDPoPNonceChallengeIsAnsweredOnceWithoutARefresh() async throws {
            let prover = DPoPProver()
            var token = OAuthToken(
                accessToken: "bound-1", tokenType: "DPoP", expiresAt: Date().addingTimeInterval(3600))
            token.boundKey = try await prover.key(for: nil)
            let authenticator = OAuthAuthenticator(
                flow: flow, token: token, configuration: .init(proofOfPossession: prover))
            let middleware = AuthenticationMiddleware(authenticator: authenticator)
            let seen = Locked<[(authorization: String?, proof: String?)]>([])
            for round in 0..<2 {
                let (response, _) = try await middleware.intercept(
                    HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/me"), body: nil, baseURL: baseURL,
                    operationID: "getMe"
                ) { request, _, _ in
                    let proof = request.headerFields[HTTPField.Name("DPoP")!]
                    let calls = seen.withLock { calls in
                        calls.append((request.headerFields[.authorization], proof))
                        return calls.count
                    }
                    // The first call of all gets the nonce challenge; every later one succeeds.
                    guard calls == 1 else { return (HTTPResponse(status: .ok), nil) }
                    var response = HTTPResponse(status: .unauthorized)
                    response.headerFields[.wwwAuthenticate] = #"DPoP error="use_dpop_nonce""#
                    response.headerFields[HTTPField.Name("DPoP-Nonce")!] = "server-nonce"
                    return (response, nil)
                }
                #expect(response.status == .ok, "round \(round)")
            }
            let calls = seen.withLock { $0 }
            #expect(calls.count == 3, "one resend for the nonce, then the nonce is remembered")
            #expect(calls.allSatisfy { $0.authorization == "DPoP bound-1" && $0.proof != nil })
            let claims = calls.compactMap { $0.proof?.split(separator: ".").dropFirst().first }.map { part -> String in
                var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                while base64.count % 4 != 0 { base64 += "=" }
                return String(decoding: Data(base64Encoded: base64) ?? Data(), as: UTF8.self)
            }
            #expect(!claims[0].contains("nonce") && claims[1].contains(#""nonce":"server-nonce""#))
            #expect(claims[2].contains(#""nonce":"server-nonce""#))
            #expect(flow.refreshCalls == 0, "a nonce is not a refresh")
        }

        @Test func aRejectedCallIsRefreshedOnceAndRetriedOnceWithTheSameBody() async throws {
            let middleware = AuthenticationMiddleware(authenticator: makeAuthenticator())
            _ = try await middleware.authenticator.validCredential()
            api.accept(["access-2"])  // the server revoked access-1
            let response = try await post(HTTPBody(#"{"text":"hi"}"#), through: middleware)
            #expect(response.status == .ok)
            #expect(flow.refreshCalls == 1)
            #expect(api.seenAuthorizations == ["Bearer access-1", "Bearer access-2"])
            #expect(bodies.withLock { $0 } == [Data(#"{"text":"hi"}"#.utf8), Data(#"{"text":"hi"}"#.utf8)])
        }

        @Test func aSinglePassBodyOfKnownLengthIsBufferedForTheRetry() async throws {
            let middleware = AuthenticationMiddleware(authenticator: makeAuthenticator())
            _ = try await middleware.authenticator.validCredential()
            api.accept(["access-2"])
            let text = Data(#"{"text":"streamed"}"#.utf8)
            let stream = AsyncStream<ArraySlice<UInt8>> { continuation in
                continuation.yield(ArraySlice(text.prefix(5)))
                continuation.yield(ArraySlice(text.dropFirst(5)))
                continuation.finish()
            }
            let body = HTTPBody(stream, length: .known(Int64(text.count)))
            #expect(body.iterationBehavior == .single)
            let response = try await post(body, through: middleware)
            #expect(response.status == .ok)
            #expect(bodies.withLock { $0 } == [text, text])
            #expect(flow.refreshCalls == 1)
        }

        @Test(arguments: [HTTPBody.Length.unknown, .known(64)])
        func aSinglePassBodyThatCannotBeBufferedIsSentOnceAndTheRejectionReturned(length: HTTPBody.Length)
            async throws
        {
            let middleware = AuthenticationMiddleware(authenticator: makeAuthenticator(), maximumBufferedBodySize: 8)
            _ = try await middleware.authenticator.validCredential()
            api.accept(["access-2"])
            let stream = AsyncStream<ArraySlice<UInt8>> { continuation in
                continuation.yield(ArraySlice(Array(repeating: UInt8(ascii: "a"), count: 64)))
                continuation.finish()
            }
            let response = try await post(HTTPBody(stream, length: length), through: middleware)
            #expect(response.status == .unauthorized, "the caller gets the rejection")
            #expect(bodies.withLock { $0.count } == 1, "sent once")
            #expect(flow.refreshCalls == 1, "the credential was still refreshed for the next call")
            #expect(try await post(HTTPBody("{}"), through: middleware).status == .ok)
            #expect(api.seenAuthorizations.last == "Bearer access-2")
        }

        @Test func aSecondRejectionIsTheAnswer() async throws {
            let middleware = AuthenticationMiddleware(authenticator: makeAuthenticator())
            api.rejectEverything()
            let response = try await post(HTTPBody("{}"), through: middleware)
            #expect(response.status == .unauthorized)
            #expect(api.requestCount == 2, "one call and one retry, never more")
            #expect(flow.refreshCalls == 1)
        }

        @Test func otherFailuresAreNotRetried() async throws {
            let middleware = AuthenticationMiddleware(authenticator: makeAuthenticator())
            let calls = Locked(0)
            let (response, _) = try await middleware.intercept(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/me"),
                body: nil, baseURL: baseURL, operationID: "getMe"
            ) { _, _, _ in
                calls.withLock { $0 += 1 }
                return (HTTPResponse(status: .forbidden), nil)
            }
            #expect(response.status == .forbidden)
            #expect(calls.withLock { $0 } == 1)
            #expect(flow.refreshCalls == 0)
        }

        @Test func fiftyConcurrentRejectedCallsShareOneRefresh() async throws {
            let middleware = AuthenticationMiddleware(authenticator: makeAuthenticator())
            _ = try await middleware.authenticator.validCredential()
            api.accept(["access-2"])
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<50 {
                    group.addTask { try await post(HTTPBody(#"{"text":"\#(index)"}"#), through: middleware).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == .ok })
            #expect(flow.refreshCalls == 1)
        }

        @Test func aCredentialIsNeverSentOverPlainHTTPToARemoteHost() async throws {
            let middleware = AuthenticationMiddleware(authenticator: makeAuthenticator())
            let calls = Locked(0)
            let error = await #expect(throws: AuthenticationError.self) {
                _ = try await middleware.intercept(
                    HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/me"),
                    body: nil, baseURL: URL(string: "http://api.example.com")!, operationID: "getMe"
                ) { _, _, _ in
                    calls.withLock { $0 += 1 }
                    return (HTTPResponse(status: .ok), nil)
                }
            }
            #expect(error?.code == .insecureTransport)
            #expect(calls.withLock { $0 } == 0)
        }

        @Test func theClientTransportDeliversStatusHeadersAndBody() async throws {
            let transport = InMemoryTransport { request in
                #expect(request.httpMethod == "PUT")
                #expect(request.url?.absoluteString == "https://api.example.com/v1/items/7?x=%20y")
                #expect(request.value(forHTTPHeaderField: "X-Trace") == "abc")
                #expect(request.httpBody == Data("payload".utf8))
                return try InMemoryTransport.reply(
                    to: request, status: 201, headers: ["ETag": "\"v2\""], json: #"{"ok":true}"#)
            }
            var request = HTTPRequest(method: .put, scheme: nil, authority: nil, path: "/items/7?x=%20y")
            request.headerFields[HTTPField.Name("X-Trace")!] = "abc"
            let (response, body) = try await HTTPTransportClient(transport).send(
                request, body: HTTPBody("payload"), baseURL: baseURL, operationID: "put")
            #expect(response.status.code == 201)
            #expect(response.headerFields[.eTag] == "\"v2\"")
            let received = try await String(collecting: try #require(body), upTo: 1024)
            #expect(received == #"{"ok":true}"#)
        }
    }
#endif
