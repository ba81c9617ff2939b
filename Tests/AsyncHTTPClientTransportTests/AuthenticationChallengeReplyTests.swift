#if AsyncHTTPClient
    import AsyncHTTPClientTransport
    import AuthenticatedRequests
    import Foundation
    import OAuthFlows
    import Testing
    import TestSupport

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// A `401` with a `WWW-Authenticate` challenge reaches the engine at once on both of the
    /// package's transports, over a real loopback socket: swift-corelibs-foundation before 6.3.2
    /// waited for ever on a `Basic` challenge (its issue 5456), and a token request timed out at
    /// its 30 s deadline instead of reporting the server's `invalid_client`.
    @Suite struct AuthenticationChallengeReplyTests {
        enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case urlSession, asyncHTTPClient
            var transport: any HTTPTransport {
                switch self {
                case .urlSession: URLSessionTransport()
                case .asyncHTTPClient: AsyncHTTPClientTransport()
                }
            }
            var testDescription: String { rawValue }
        }

        static let challenges = [
            #"Basic realm="token", error="invalid_client""#, #"Basic realm="x""#, "Basic",
            #"Digest realm="d", nonce="n""#,
            #"Bearer error="invalid_token", Basic realm="both""#, #"Negotiate, Basic realm="r""#,
        ]

        static let body =
            #"{"error":"invalid_client","error_description":"client authentication failed: unknown client"}"#

        @Test(arguments: Kind.allCases)
        func aTokenEndpointsBasicChallengeIsATypedInvalidClientAtOnce(kind: Kind) async throws {
            for challenge in Self.challenges {
                let server = try await LoopbackHTTPServer { _ in
                    .init(
                        status: 401,
                        headers: [("WWW-Authenticate", challenge), ("Content-Type", "application/json")],
                        body: Self.body)
                }
                defer { Task { try? await server.shutdown() } }
                let endpoint = TokenEndpoint(
                    url: server.baseURL.appendingPathComponent("token"),
                    client: .clientSecretBasic(id: "app", secret: "wrong secret"))
                // A deadline far above what the reply takes: a hang shows as a timeout, not as a pass.
                let context = AuthenticationContext(transport: kind.transport, timeout: 20)
                let started = ContinuousClock.now
                let error = await #expect(throws: OAuthError.self, "\(kind) \(challenge)") {
                    try await endpoint.requestToken(grantType: "client_credentials", parameters: [], context: context)
                }
                #expect(error?.code.rawValue == "invalid_client", "\(kind) \(challenge)")
                #expect(error?.description.contains("unknown client") == true, "the server's error_description")
                #expect(server.requests.count == 1, "asked once, not again with a guessed credential")
                let elapsed = ContinuousClock.now - started
                // Reported, not asserted: the figure for the issue's "under 1 s" on this machine.
                print("\(kind) \(challenge): invalid_client after \(elapsed)")
            }
        }

        @Test(arguments: Kind.allCases)
        func aResourcesBasicChallengeIsReturnedWithItsBody(kind: Kind) async throws {
            let server = try await LoopbackHTTPServer { _ in
                .init(status: 401, headers: [("WWW-Authenticate", #"Basic realm="api""#)], body: "who are you?")
            }
            defer { Task { try? await server.shutdown() } }
            let (body, response) = try await kind.transport.send(
                URLRequest(url: server.baseURL.appendingPathComponent("me")), options: .init(timeout: 20))
            #expect(response.statusCode == 401)
            #expect(response.value(forHTTPHeaderField: "WWW-Authenticate") == #"Basic realm="api""#)
            #expect(String(decoding: body, as: UTF8.self) == "who are you?")
        }
    }
#endif
