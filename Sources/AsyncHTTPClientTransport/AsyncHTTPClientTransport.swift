#if AsyncHTTPClient
    import AsyncHTTPClient
    import AuthenticatedRequests
    import Foundation
    import NIOCore
    import NIOHTTP1
    import NIOPosix

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// An `HTTPTransport` on swift-server/async-http-client, for servers:
    /// SwiftNIO's event loops instead of `URLSession`, with connection pooling and HTTP/2.
    ///
    /// Enable the package trait `AsyncHTTPClient` to build it:
    ///
    /// ```swift
    /// .package(url: "https://github.com/OWNER/AuthenticatedRequests.git", branch: "main", traits: ["AsyncHTTPClient"])
    /// ```
    ///
    /// Redirects of ordinary requests are followed by `client`, which drops `Authorization`,
    /// `Proxy-Authorization` and `Cookie` when a redirect leaves the origin of the request: a
    /// token goes only to the origin it was applied to (the tests check it).
    ///
    /// Requests that must not follow redirects (those to an authorization server, which carry a
    /// secret in their body) go through ``nonRedirectingClient`` instead, a client configured
    /// with `redirectConfiguration: .disallow`: AsyncHTTPClient chooses redirects per client, not
    /// per request. Its deadline covers the whole body, not only the response head.
    public struct AsyncHTTPClientTransport: HTTPTransport {
        /// The client that sends ordinary requests.
        public let client: HTTPClient
        /// The client for requests that must not follow redirects; it must be configured with
        /// `redirectConfiguration: .disallow`.
        public let nonRedirectingClient: HTTPClient
        /// How long one ordinary request may take, redirects and body included.
        public let timeout: TimeAmount
        /// The largest response body accepted, in bytes.
        public let maximumBodySize: Int

        /// A process-wide client that follows no redirect, on the same event loops as
        /// `HTTPClient.shared`; like it, it lives as long as the process and needs no shutdown.
        ///
        /// It does not retry a connection that failed: an authorization server that is down
        /// is reported at once (`HTTPTransportError.Code.connectionRefused`), not at the
        /// deadline. (`HTTPClient.shared` retries until the request's deadline, then reports the
        /// failure.)
        public static let sharedNonRedirectingClient: HTTPClient = {
            var configuration = HTTPClient.Configuration()
            configuration.redirectConfiguration = .disallow
            configuration.connectionPool.retryConnectionEstablishment = false
            return HTTPClient(
                eventLoopGroup: HTTPClient.defaultEventLoopGroup,
                configuration: configuration
            )
        }()

        /// Creates a transport.
        ///
        /// - Parameters:
        ///   - client: the client for ordinary requests; the process-wide `HTTPClient.shared`
        ///     by default, which needs no shutdown.
        ///   - nonRedirectingClient: the client for requests that must not follow redirects;
        ///     ``sharedNonRedirectingClient`` by default. Pass your own (with
        ///     `redirectConfiguration: .disallow`) when `client` has settings such as a proxy or
        ///     TLS configuration that the authorization server needs too.
        ///   - timeout: the total deadline of an ordinary request.
        ///   - maximumBodySize: the largest body accepted.
        public init(
            client: HTTPClient = .shared,
            nonRedirectingClient: HTTPClient = AsyncHTTPClientTransport.sharedNonRedirectingClient,
            timeout: TimeAmount = .seconds(60),
            maximumBodySize: Int = 16 << 20
        ) {
            self.client = client
            self.nonRedirectingClient = nonRedirectingClient
            self.timeout = timeout
            self.maximumBodySize = maximumBodySize
        }

        /// Sends `request` and collects its body, within ``timeout``.
        public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            let seconds = Double(timeout.nanoseconds) / 1e9
            return try await send(request, options: HTTPTransportOptions(timeout: seconds))
        }

        /// Sends `request` under `options`: through ``nonRedirectingClient`` when redirects are
        /// not allowed, with the deadline covering the whole body, and the body capped.
        public func send(_ request: URLRequest, options: HTTPTransportOptions) async throws -> (
            Data, HTTPURLResponse
        ) {
            let client = options.followsRedirects ? self.client : nonRedirectingClient
            let limit = min(options.maximumResponseSize ?? maximumBodySize, maximumBodySize)
            do {
                let (body, response) = try await Self.execute(
                    request, on: client, timeout: options.timeout, maximumBodySize: limit)
                try options.check(body, of: response, for: request)
                return (body, response)
            } catch {
                throw Self.classify(error, sending: request, timeout: options.timeout)
            }
        }

        /// Sends `request` with AsyncHTTPClient's own deadline for the response head (so that a
        /// connection that fails is reported as that failure, not as a timeout), then collects the
        /// body within what is left of the deadline.
        private static func execute(
            _ request: URLRequest,
            on client: HTTPClient,
            timeout: TimeInterval?,
            maximumBodySize: Int
        ) async throws -> (Data, HTTPURLResponse) {
            guard let url = request.url else {
                throw HTTPTransportError(.failed, sending: request, underlyingError: URLError(.badURL))
            }
            var outgoing = HTTPClientRequest(url: url.absoluteString)
            outgoing.method = NIOHTTP1.HTTPMethod(rawValue: request.httpMethod ?? "GET")
            for (name, value) in request.allHTTPHeaderFields ?? [:] {
                outgoing.headers.add(name: name, value: value)
            }
            if let body = request.httpBody {
                outgoing.body = .bytes(ByteBuffer(bytes: body))
            }
            let seconds = timeout.map { Swift.min(Swift.max($0, 0), 1e7) } ?? 3600
            let deadline = NIODeadline.now() + .nanoseconds(Int64(seconds * 1e9))
            let response = try await client.execute(outgoing, deadline: deadline)
            // AsyncHTTPClient's deadline ends with the head; the body gets what is left of it.
            let buffer: ByteBuffer
            do {
                buffer = try await collect(
                    response.body, upTo: maximumBodySize, by: deadline, on: client.eventLoopGroup.any()
                ) { HTTPTransportError.timedOut(after: seconds, url: url) }
            } catch is NIOTooManyBytesError {
                throw HTTPTransportError.responseTooLarge(limit: maximumBodySize, url: url)
            }
            var headers: [String: String] = [:]
            for (name, value) in response.headers {
                headers[name] = headers[name].map { "\($0), \(value)" } ?? value
            }
            guard
                let httpResponse = HTTPURLResponse(
                    url: response.url ?? url,
                    statusCode: Int(response.status.code),
                    httpVersion: "HTTP/\(response.version.major).\(response.version.minor)",
                    headerFields: headers
                )
            else {
                throw HTTPTransportError(.failed, sending: request, underlyingError: URLError(.badServerResponse))
            }
            return (Data(buffer.readableBytesView), httpResponse)
        }

        /// Collects `body` by `deadline`. An event-loop timer, removed from its loop as soon as
        /// the body is complete, cancels the collection at the deadline and answers the caller at
        /// once. Nothing is left waiting: a cancelled `Task.sleep` timer stays queued on Linux
        /// until its whole timeout passes, holding memory (~700 bytes a request, a minute long).
        private static func collect(
            _ body: HTTPClientResponse.Body,
            upTo limit: Int,
            by deadline: NIODeadline,
            on eventLoop: any EventLoop,
            timeoutError: @escaping @Sendable () -> any Error
        ) async throws -> ByteBuffer {
            let race = OneShot<ByteBuffer>()
            let work = Task { race.finish(with: await Result { try await body.collect(upTo: limit) }) }
            let timer = eventLoop.scheduleTask(deadline: deadline) {
                // The timeout is delivered before the work is cancelled: the other order let a
                // fast-cancelled collection deliver its CancellationError first (seen under load).
                race.finish(with: .failure(timeoutError()))
                work.cancel()
            }
            defer {
                timer.cancel()
                work.cancel()
            }
            return try await race.value()
        }

        /// `error` as an ``HTTPTransportError`` of its class, the same classes `URLSessionTransport`
        /// reports: SwiftNIO and AsyncHTTPClient errors never reach the caller raw.
        static func classify(_ error: any Error, sending request: URLRequest, timeout: TimeInterval?) -> any Error {
            switch error {
            case is HTTPTransportError, is CancellationError:
                return error
            case let error as HTTPClientError where error == .cancelled && Task.isCancelled:
                return CancellationError()
            case let error as HTTPClientError where error == .deadlineExceeded:
                return HTTPTransportError.timedOut(after: timeout ?? 3600, url: request.url)
            default:
                let code = transportErrorCode(of: error) ?? .failed
                return HTTPTransportError(code, sending: request, underlyingError: error)
            }
        }

        /// The class of a SwiftNIO, NIOSSL or AsyncHTTPClient error; `nil` when it names none.
        static func transportErrorCode(of error: any Error) -> HTTPTransportError.Code? {
            switch error {
            case let error as IOError:
                return HTTPTransportError.code(ofErrno: error.errnoCode)
            case let error as NIOConnectionError:
                // Every address failed to connect: the first failure names the class; no address
                // at all means the name did not resolve.
                guard let first = error.connectionErrors.first else {
                    return error.dnsAError != nil || error.dnsAAAAError != nil ? .hostNotFound : nil
                }
                return transportErrorCode(of: first.error)
            case let error as ChannelError:
                switch error {
                case .connectTimeout: return .timedOut
                case .eof, .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed: return .connectionLost
                default: return nil
                }
            case let error as HTTPClientError:
                switch error {
                case .connectTimeout, .readTimeout, .writeTimeout, .deadlineExceeded: return .timedOut
                case .remoteConnectionClosed: return .connectionLost
                case .tlsHandshakeTimeout: return .tlsFailed
                default: return nil
                }
            case is NIOTooManyBytesError:
                return .responseTooLarge
            default:
                // NIOSSL is not a dependency of this target; its errors are known by their types'
                // module (`NIOSSLError`, `BoringSSLError`).
                let type = String(reflecting: Swift.type(of: error))
                return type.hasPrefix("NIOSSL.") ? .tlsFailed : nil
            }
        }
    }
#endif
