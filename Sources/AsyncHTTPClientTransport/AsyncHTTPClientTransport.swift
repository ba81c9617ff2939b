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
        public func send(_ request: URLRequest) async throws -> (Data, ResponseHead) {
            let seconds = Double(timeout.nanoseconds) / 1e9
            return try await send(request, options: HTTPTransportOptions(timeout: seconds))
        }

        /// Sends `request` under `options`: through ``nonRedirectingClient`` when redirects are
        /// not allowed, with the deadline covering the whole body, and the body capped.
        public func send(_ request: URLRequest, options: HTTPTransportOptions) async throws -> (
            Data, ResponseHead
        ) {
            let client = options.followsRedirects ? self.client : nonRedirectingClient
            let limit = min(options.maximumResponseSize ?? maximumBodySize, maximumBodySize)
            do {
                let (body, response) = try await Self.execute(
                    request, on: client, timeout: options.timeout, maximumBodySize: limit)
                try options.check(body, of: response, for: request)
                return (body, response)
            } catch {
                throw Self.classify(error, sending: request, timeout: options.timeout, maximumBodySize: limit)
            }
        }

        /// Sends `request` with AsyncHTTPClient's own deadline, which covers the whole exchange,
        /// body included, and its own accumulator, which stops at `maximumBodySize`: no task or
        /// timer of this transport's per request. The head is read straight from SwiftNIO's header
        /// fields, with no Foundation response object.
        private static func execute(
            _ request: URLRequest,
            on client: HTTPClient,
            timeout: TimeInterval?,
            maximumBodySize: Int
        ) async throws -> (Data, ResponseHead) {
            guard let url = request.url else {
                throw HTTPTransportError(.failed, sending: request, underlyingError: URLError(.badURL))
            }
            var headers = HTTPHeaders()
            for (name, value) in request.allHTTPHeaderFields ?? [:] {
                headers.add(name: name, value: value)
            }
            let outgoing = try HTTPClient.Request(
                url: url, method: NIOHTTP1.HTTPMethod(rawValue: request.httpMethod ?? "GET"),
                headers: headers, body: request.httpBody.map { .bytes($0) })
            let seconds = timeout.map { Swift.min(Swift.max($0, 0), 1e7) } ?? 3600
            let deadline = NIODeadline.now() + .nanoseconds(Int64(seconds * 1e9))
            let accumulator = ResponseAccumulator(
                request: outgoing, maxBodySize: Swift.min(maximumBodySize, Int(UInt32.max)))
            let task = client.execute(request: outgoing, delegate: accumulator, deadline: deadline)
            let response = try await withTaskCancellationHandler {
                try await task.futureResult.get()
            } onCancel: {
                task.cancel()
            }
            var fields = HeaderFields()
            for (name, value) in response.headers {
                fields.append(name: name, value: value)
            }
            let head = ResponseHead(
                statusCode: Int(response.status.code), url: response.url ?? url, headerFields: fields)
            return (response.body.map { Data($0.readableBytesView) } ?? Data(), head)
        }

        /// `error` as an ``HTTPTransportError`` of its class, the same classes `URLSessionTransport`
        /// reports: SwiftNIO and AsyncHTTPClient errors never reach the caller raw.
        static func classify(
            _ error: any Error, sending request: URLRequest, timeout: TimeInterval?, maximumBodySize: Int
        ) -> any Error {
            switch error {
            case is HTTPTransportError, is CancellationError:
                return error
            case is ResponseAccumulator.ResponseTooBigError:
                return HTTPTransportError.responseTooLarge(limit: maximumBodySize, url: request.url)
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
