#if AsyncHTTPClient
    import AsyncHTTPClientTransport
    import AuthenticatedRequests
    import Foundation
    import NIOCore
    import NIOPosix
    import Testing
    import TestSupport

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// Every class of transport failure is one typed `HTTPTransportError` code on both of the
    /// package's transports, with one sentence naming the request, the host and the reason, and
    /// the transport's own error kept; over real loopback sockets.
    @Suite struct TransportFailureClassTests {
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

        func failure(
            of kind: Kind, sending request: URLRequest, options: HTTPTransportOptions = .init(timeout: 20)
        ) async -> HTTPTransportError? {
            do {
                _ = try await kind.transport.send(request, options: options)
                Issue.record("\(kind): the request succeeded")
                return nil
            } catch let error as HTTPTransportError {
                return error
            } catch {
                Issue.record("\(kind): an untyped error escaped: \(type(of: error)) \(error)")
                return nil
            }
        }

        @Test(arguments: Kind.allCases)
        func aClosedPortIsConnectionRefused(kind: Kind) async throws {
            let refusing = try RefusingPort()
            let port = refusing.port
            defer { withExtendedLifetime(refusing) {} }
            let url = URL(string: "http://127.0.0.1:\(port)/token?code=x")!
            // As the token endpoint is asked: the authorization-server client retries no
            // connection, so the failure is reported at once, not at the deadline.
            let error = await failure(of: kind, sending: URLRequest(url: url), options: .authorizationServer())
            #expect(error?.code == .connectionRefused, "\(String(describing: error))")
            #expect(error?.origin == "http://127.0.0.1:\(port)")
            #expect(error?.underlyingError != nil, "the transport's own error is kept")
            let text = error?.description ?? ""
            #expect(text.contains("127.0.0.1:\(port)") && text.contains("refused"), "\(text)")
            #expect(!text.contains("code=x") && !text.contains("<redacted>"), "one sentence, no query: \(text)")
            #expect(!text.contains("\n"))
        }

        @Test(arguments: Kind.allCases)
        func aServerThatClosesTheConnectionIsConnectionLost(kind: Kind) async throws {
            let server = try await MisbehavingServer(.reset)
            defer { Task { try await server.shutdown() } }
            let error = await failure(of: kind, sending: URLRequest(url: server.baseURL.appendingPathComponent("r")))
            #expect(error?.code == .connectionLost, "\(String(describing: error))")
        }

        @Test(arguments: Kind.allCases)
        func aServerThatNeverAnswersIsTimedOut(kind: Kind) async throws {
            let server = try await MisbehavingServer(.hang)
            defer { Task { try await server.shutdown() } }
            let error = await failure(
                of: kind, sending: URLRequest(url: server.baseURL.appendingPathComponent("h")),
                options: .init(timeout: 0.5))
            #expect(error?.code == .timedOut)
        }

        /// A server that writes a plain HTTP reply as soon as a client connects, then closes.
        final class PlainGreeter: ChannelInboundHandler, Sendable {
            typealias InboundIn = ByteBuffer
            func channelActive(context: ChannelHandlerContext) {
                let reply = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: reply))).whenComplete { _ in
                    context.close(promise: nil)
                }
            }
        }

        @Test(arguments: Kind.allCases)
        func aPlainServerAskedForTLSIsATLSFailure(kind: Kind) async throws {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let channel = try await ServerBootstrap(group: group)
                .childChannelInitializer { $0.pipeline.addHandler(PlainGreeter()) }
                .bind(host: "127.0.0.1", port: 0).get()
            defer {
                Task {
                    try await channel.close()
                    try await group.shutdownGracefully()
                }
            }
            let url = URL(string: "https://127.0.0.1:\(channel.localAddress?.port ?? 0)/tls")!
            let error = await failure(of: kind, sending: URLRequest(url: url))
            #expect(error?.code == .tlsFailed, "\(String(describing: error))")
            #expect(error?.description.contains("TLS") == true)
        }

        @Test(arguments: Kind.allCases)
        func aBodyOverTheCapIsResponseTooLarge(kind: Kind) async throws {
            let server = try await LoopbackHTTPServer { _ in .init(body: String(repeating: "x", count: 4096)) }
            defer { Task { try await server.shutdown() } }
            let error = await failure(
                of: kind, sending: URLRequest(url: server.baseURL.appendingPathComponent("big")),
                options: .init(timeout: 20, maximumResponseSize: 1024))
            #expect(error?.code == .responseTooLarge)
        }

        @Test(arguments: Kind.allCases)
        func aRedirectWhereNoneMayBeFollowedIsRedirected(kind: Kind) async throws {
            let server = try await LoopbackHTTPServer { _ in
                .init(status: 307, headers: [("Location", "http://127.0.0.1:1/elsewhere")])
            }
            defer { Task { try await server.shutdown() } }
            var request = URLRequest(url: server.baseURL.appendingPathComponent("token"))
            request.httpMethod = "POST"
            request.httpBody = Data("client_secret=s".utf8)
            do {
                let (_, response) = try await kind.transport.send(request, options: .authorizationServer())
                #expect(response.statusCode == 307, "the 3xx itself comes back; nothing was followed")
            } catch let error as HTTPTransportError {
                #expect(error.code == .redirected)
            }
        }

        @Test func everyURLErrorOfAKnownClassMapsToItsCode() {
            let cases: [(URLError.Code, HTTPTransportError.Code)] = [
                (.cannotConnectToHost, .connectionRefused), (.networkConnectionLost, .connectionLost),
                (.timedOut, .timedOut), (.cannotFindHost, .hostNotFound), (.dnsLookupFailed, .hostNotFound),
                (.secureConnectionFailed, .tlsFailed), (.serverCertificateUntrusted, .tlsFailed),
                (.notConnectedToInternet, .notConnected), (.badURL, .failed),
            ]
            let request = URLRequest(url: URL(string: "https://auth.example.com/token")!)
            for (urlCode, code) in cases {
                let error = HTTPTransportError.classifying(URLError(urlCode), sending: request) as? HTTPTransportError
                #expect(error?.code == code, "\(urlCode)")
                #expect(error?.description.contains("\(urlCode.rawValue)") == true, "the number is kept")
            }
            let dns = HTTPTransportError.classifying(URLError(.cannotFindHost), sending: request)
            #expect("\(dns)".contains("auth.example.com") && "\(dns)".contains("DNS"))
        }
    }
#endif
