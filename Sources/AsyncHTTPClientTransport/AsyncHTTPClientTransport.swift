#if AsyncHTTPClient
    import AsyncHTTPClient
    import AuthenticatedRequests
    import Foundation
    import NIOCore
    import NIOHTTP1
    import NIOPosix
    import NIOSSL

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
        /// The deadlines of bodies still on their way, one set per client, shared by the copies of
        /// this transport.
        let bodyDeadlines: (client: BodyDeadlines, nonRedirectingClient: BodyDeadlines)
        /// The certificate and key presented to servers that ask for one (mutual TLS, RFC 8705);
        /// `nil` for none.
        public let clientIdentity: ClientIdentity?
        /// The TLS settings of every request, with ``clientIdentity`` added, when either was given.
        let tls: TransportTLS?

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
        ///   - clientIdentity: the certificate chain and key to present when a server asks for a
        ///     client certificate (mutual TLS, RFC 8705), on every request of both clients. PEM
        ///     files are read again when they change: the next connection presents the new
        ///     certificate (connections are pooled by certificate, so none made with the old one
        ///     is reused for it). `nil` by default: none.
        ///   - tlsConfiguration: the TLS settings of every request (trust roots, versions), to
        ///     which `clientIdentity` is added; `nil` for the clients' own, or for
        ///     `TLSConfiguration.makeClientConfiguration()` when there is a `clientIdentity`.
        public init(
            client: HTTPClient = .shared,
            nonRedirectingClient: HTTPClient = AsyncHTTPClientTransport.sharedNonRedirectingClient,
            timeout: TimeAmount = .seconds(60),
            maximumBodySize: Int = 16 << 20,
            clientIdentity: ClientIdentity? = nil,
            tlsConfiguration: TLSConfiguration? = nil
        ) {
            self.clientIdentity = clientIdentity
            self.tls =
                clientIdentity != nil || tlsConfiguration != nil
                ? TransportTLS(base: tlsConfiguration ?? .makeClientConfiguration(), identity: clientIdentity) : nil
            self.client = client
            self.nonRedirectingClient = nonRedirectingClient
            self.timeout = timeout
            self.maximumBodySize = maximumBodySize
            self.bodyDeadlines = (
                BodyDeadlines(on: client.eventLoopGroup), BodyDeadlines(on: nonRedirectingClient.eventLoopGroup)
            )
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
            let (client, deadlines) =
                options.followsRedirects
                ? (self.client, bodyDeadlines.client) : (nonRedirectingClient, bodyDeadlines.nonRedirectingClient)
            let limit = min(options.maximumResponseSize ?? maximumBodySize, maximumBodySize)
            do {
                let tlsConfiguration = try tls?.current().configuration
                let (body, response) = try await Self.execute(
                    request, on: client, tlsConfiguration: tlsConfiguration, timeout: options.timeout,
                    maximumBodySize: limit, deadlines: deadlines)
                try options.check(body, of: response, for: request)
                return (body, response)
            } catch {
                throw Self.classify(error, sending: request, timeout: options.timeout, maximumBodySize: limit)
            }
        }

        /// Sends `request` through AsyncHTTPClient's async API with the deadline, then collects the
        /// body under the same deadline (see ``collect(_:upTo:before:deadlines:)``). The head is read straight
        /// from SwiftNIO's header fields, with no Foundation response object.
        private static func execute(
            _ request: URLRequest,
            on client: HTTPClient,
            tlsConfiguration: TLSConfiguration?,
            timeout: TimeInterval?,
            maximumBodySize: Int,
            deadlines: BodyDeadlines
        ) async throws -> (Data, ResponseHead) {
            guard let url = request.url else {
                throw HTTPTransportError(.failed, sending: request, underlyingError: URLError(.badURL))
            }
            var outgoing = HTTPClientRequest(url: url.absoluteString)
            if let method = request.httpMethod, method != "GET" { outgoing.method = HTTPMethod(rawValue: method) }
            if let fields = request.allHTTPHeaderFields, !fields.isEmpty {
                outgoing.headers.reserveCapacity(fields.count)
                for (name, value) in fields { outgoing.headers.add(name: name, value: value) }
            }
            if let body = request.httpBody { outgoing.body = .bytes(body) }
            if let tlsConfiguration { outgoing.tlsConfiguration = tlsConfiguration }
            let seconds = timeout.map { Swift.min(Swift.max($0, 0), 1e7) } ?? 3600
            let deadline = NIODeadline.now() + .nanoseconds(Int64(seconds * 1e9))
            let response = try await client.execute(outgoing, deadline: deadline)
            var fields = HeaderFields()
            fields.reserveCapacity(response.headers.count)
            var declaredLength: Int?
            for (name, value) in response.headers {
                fields.append(name: name, value: value)
                // The length first: most names are not 14 bytes long, and the call costs more.
                if name.utf8.count == 14, name.isEqualIgnoringASCIICase(to: "Content-Length") {
                    declaredLength = Int(value)
                }
            }
            // The URL answered is the one asked unless a redirect was followed (`history` has one
            // entry per request); reading `response.url` parses its text again.
            let answered = response.history.count > 1 ? response.url ?? url : url
            let head = ResponseHead(statusCode: Int(response.status.code), url: answered, headerFields: fields)
            // A body declared larger than the cap is refused before it is read.
            if let declaredLength, declaredLength > maximumBodySize, outgoing.method != .HEAD,
                response.status != .notModified, response.status != .noContent
            {
                throw NIOTooManyBytesError(maxBytes: maximumBodySize)
            }
            let body = try await collect(
                response.body, upTo: Swift.min(maximumBodySize, Int(UInt32.max)), before: deadline,
                deadlines: deadlines)
            return (Data(body.readableBytesView), head)
        }

        /// Collects `body` up to `limit` bytes before `deadline`: AsyncHTTPClient's own deadline
        /// ends at the response head.
        ///
        /// The collection starts at once in a task of its own (see ``startTask(_:)``), and usually
        /// finishes there: a small body comes in the same read as its head.
        /// Only a body still on its way gets its deadline in `deadlines`, whose event-loop timer
        /// cancels the collection then (AsyncHTTPClient then closes the connection); cancelling
        /// the caller cancels it too.
        static func collect(
            _ body: HTTPClientResponse.Body, upTo limit: Int, before deadline: NIODeadline, deadlines: BodyDeadlines
        ) async throws -> ByteBuffer {
            let state = Locked(CollectionState.collecting)
            let collection = startTask {
                defer { state.withLock { if $0 == .collecting { $0 = .finished } } }
                var collected = ByteBuffer()
                for try await part in body {
                    guard part.readableBytes <= limit - collected.readableBytes else {
                        throw NIOTooManyBytesError(maxBytes: limit)
                    }
                    if collected.readableBytes == 0 { collected = part } else { collected.writeImmutableBuffer(part) }
                }
                return collected
            }
            guard state.withLock({ $0 }) != .finished else { return try await collection.value }
            let pending = deadlines.add(deadline) {
                let cancel = state.withLock { state in
                    guard state == .collecting else { return false }
                    state = .timedOut
                    return true
                }
                if cancel { collection.cancel() }
            }
            defer { deadlines.remove(pending) }
            do {
                return try await withTaskCancellationHandler {
                    try await collection.value
                } onCancel: {
                    collection.cancel()
                }
            } catch {
                throw state.withLock({ $0 }) == .timedOut ? HTTPClientError.deadlineExceeded : error
            }
        }

        /// Where the body's collection is.
        enum CollectionState: Sendable {
            case collecting, finished, timedOut
        }

        /// `operation` in a detached task (the collection needs no task-local value, and awaiting
        /// it lends it the caller's priority) that starts on the caller's thread where the system
        /// has `Task.immediateDetached` (Swift 6.2 on Linux, Apple's systems of 2025), and is
        /// enqueued as usual elsewhere.
        private static func startTask<Success: Sendable>(
            _ operation: sending @escaping @isolated(any) () async throws -> Success
        ) -> Task<Success, any Error> {
            #if compiler(>=6.2)
                if #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *) {
                    return Task.immediateDetached(operation: operation)
                }
            #endif
            return Task.detached(operation: operation)
        }

        /// The `x5t#S256` of the certificate ``clientIdentity`` presents now (its files read again
        /// if they changed); `nil` without a client identity.
        public func clientCertificateThumbprint() throws -> String? {
            try tls?.current().thumbprint
        }

        /// `error` as an ``HTTPTransportError`` of its class, the same classes `URLSessionTransport`
        /// reports: SwiftNIO and AsyncHTTPClient errors never reach the caller raw.
        static func classify(
            _ error: any Error, sending request: URLRequest, timeout: TimeInterval?, maximumBodySize: Int
        ) -> any Error {
            switch error {
            case is HTTPTransportError, is CancellationError, is ClientIdentityError:
                return error
            case is NIOTooManyBytesError:
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
