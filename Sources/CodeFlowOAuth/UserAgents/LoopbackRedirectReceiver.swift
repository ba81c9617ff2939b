#if os(macOS) || os(Linux)
    // SwiftNIO, which the receiver listens with, is a dependency on macOS and Linux only
    // (Package.swift): apps on iOS, tvOS, watchOS and visionOS build no SwiftNIO.
    import AuthenticatedRequests
    import Foundation
    import NIOCore
    import NIOHTTP1
    import NIOPosix

    /// An HTTP listener on `127.0.0.1` and an ephemeral port that waits for the one redirect of a
    /// sign-in (RFC 8252 §7.3), hardened against other processes on the same machine:
    ///
    /// - Only a request to `path` whose `state` equals the expected one ends the wait. Any other
    ///   request to `path` gets a `400` page and the receiver keeps waiting; other paths get a `404`.
    ///   The page is chosen after the check, and never echoes the query.
    /// - Every connection gets one response and is closed; a connection that sends no complete
    ///   request within ``Limits/connectionTimeout`` is closed.
    /// - At most ``Limits/maximumConnections`` connections are open at once; a new one beyond that
    ///   closes the oldest, so idle connections cannot lock the browser out.
    /// - ``close()`` closes the listening socket and every connection still open.
    /// - A `POST` is answered `405` unless the flow asked for `form_post.jwt` (``acceptFormPost()``);
    ///   then a form (`application/x-www-form-urlencoded`, at most ``Limits/maximumFormSize`` bytes)
    ///   posted to `path` is routed like a redirect, its parameters becoming the query of the URL the
    ///   wait returns.
    package final class LoopbackRedirectReceiver: Sendable {
        /// The bounds on connections.
        package struct Limits: Sendable {
            /// The most connections open at once.
            package var maximumConnections = 16
            /// How long a connection may stay open without completing a request, in seconds.
            package var connectionTimeout: TimeInterval = 5
            /// The largest form body accepted, in bytes.
            package var maximumFormSize = 65_536

            package init(
                maximumConnections: Int = 16, connectionTimeout: TimeInterval = 5, maximumFormSize: Int = 65_536
            ) {
                self.maximumConnections = maximumConnections
                self.connectionTimeout = connectionTimeout
                self.maximumFormSize = maximumFormSize
            }
        }

        private let channel: any Channel
        private let connections: ConnectionRegistry
        private let waiter: RedirectWaiter
        private let expectedState: Locked<String?>
        private let acceptsFormPost: Locked<Bool>
        /// `http://127.0.0.1:<port><path>`.
        package let redirectURI: URL

        private init(
            channel: any Channel,
            connections: ConnectionRegistry,
            waiter: RedirectWaiter,
            expectedState: Locked<String?>,
            acceptsFormPost: Locked<Bool>,
            redirectURI: URL
        ) {
            self.channel = channel
            self.connections = connections
            self.waiter = waiter
            self.expectedState = expectedState
            self.acceptsFormPost = acceptsFormPost
            self.redirectURI = redirectURI
        }

        /// Starts listening on `port` of `127.0.0.1` (an ephemeral port when `0`).
        package static func start(path: String, port requestedPort: Int = 0, limits: Limits = Limits()) async throws
            -> LoopbackRedirectReceiver
        {
            let waiter = RedirectWaiter()
            let expectedState = Locked<String?>(nil)
            let acceptsFormPost = Locked(false)
            let connections = ConnectionRegistry(maximum: limits.maximumConnections)
            let timeout = TimeAmount.nanoseconds(Int64(max(limits.connectionTimeout, 0.01) * 1e9))
            let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 16)
                // The receiver closes every connection itself, so its side waits out TIME_WAIT; without
                // SO_REUSEADDR a fixed redirect port could not be listened on again for a minute (a
                // second sign-in, a step-up). On Linux it never lets two sockets listen on one port.
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    connections.admit(channel)
                    let deadline = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
                    channel.closeFuture.whenComplete { _ in
                        deadline.cancel()
                        connections.remove(channel)
                    }
                    return channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
                        channel.pipeline.addHandler(
                            RedirectHandler(
                                path: path, waiter: waiter, expectedState: expectedState,
                                acceptsFormPost: acceptsFormPost, maximumFormSize: limits.maximumFormSize)
                        )
                    }
                }
            let channel: any Channel
            do {
                channel = try await bootstrap.bind(host: "127.0.0.1", port: requestedPort).get()
            } catch  where requestedPort != 0 {
                throw CodeFlowError(
                    .redirectPortUnavailable,
                    "Could not listen on 127.0.0.1:\(requestedPort), the port of the redirect URI (\(error)); "
                        + "another sign-in or program may be using it.")
            }
            guard let port = channel.localAddress?.port, let url = URL(string: "http://127.0.0.1:\(port)\(path)") else {
                try? await channel.close()
                throw CodeFlowError(.invalidConfiguration, "Could not listen on a loopback port.")
            }
            return LoopbackRedirectReceiver(
                channel: channel,
                connections: connections,
                waiter: waiter,
                expectedState: expectedState,
                acceptsFormPost: acceptsFormPost,
                redirectURI: url
            )
        }

        /// The `state` the redirect must carry; until it is set, no redirect ends the wait.
        package func expect(state: String) {
            expectedState.withLock { $0 = state }
        }

        /// Accepts the response as a form posted to the redirect URI (`form_post.jwt`), for this
        /// flow only; until then a `POST` is refused.
        package func acceptFormPost() {
            acceptsFormPost.withLock { $0 = true }
        }

        /// The number of connections open now.
        package var openConnections: Int { connections.count }

        /// Waits for the redirect, at most `timeout` seconds; cancellable.
        package func waitForRedirect(timeout: TimeInterval) async throws -> URL {
            let waiter = self.waiter
            let seconds = timeout.isFinite ? min(max(timeout, 0), 86_400) : 86_400
            let timer = Task {
                try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
                waiter.finish(.failure(CodeFlowError(.timedOut, "No redirect arrived within \(Int(seconds)) seconds.")))
            }
            defer { timer.cancel() }
            return try await waiter.wait()
        }

        /// Closes the listening socket and every open connection; new connections are refused from
        /// then on.
        package func close() async {
            waiter.finish(.failure(CancellationError()))
            try? await channel.close()
            connections.closeAll()
        }
    }

    /// The open connections, oldest first.
    private final class ConnectionRegistry: Sendable {
        private let maximum: Int
        private let channels = Locked<[ObjectIdentifier: (order: UInt64, channel: any Channel)]>([:])
        private let counter = Locked<UInt64>(0)

        init(maximum: Int) {
            self.maximum = max(maximum, 1)
        }

        var count: Int { channels.withLock { $0.count } }

        /// Registers `channel`, closing the oldest connection when the cap is reached.
        func admit(_ channel: any Channel) {
            let order = counter.withLock { value -> UInt64 in
                value &+= 1
                return value
            }
            let evicted = channels.withLock { channels -> (any Channel)? in
                var oldest: (any Channel)?
                if channels.count >= maximum, let entry = channels.min(by: { $0.value.order < $1.value.order }) {
                    channels[entry.key] = nil
                    oldest = entry.value.channel
                }
                channels[ObjectIdentifier(channel)] = (order, channel)
                return oldest
            }
            evicted?.close(promise: nil)
        }

        func remove(_ channel: any Channel) {
            _ = channels.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
        }

        func closeAll() {
            let open = channels.withLock { channels -> [any Channel] in
                defer { channels = [:] }
                return channels.values.map(\.channel)
            }
            for channel in open { channel.close(promise: nil) }
        }
    }

    /// Answers one request per connection, then closes it.
    private final class RedirectHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        /// A form being received: the request's HTTP version and the body so far.
        private struct Form {
            let version: HTTPVersion
            var body: ByteBuffer
        }

        private let path: String
        private let waiter: RedirectWaiter
        private let expectedState: Locked<String?>
        private let acceptsFormPost: Locked<Bool>
        private let maximumFormSize: Int
        /// Set once this connection has its response; later requests on it are ignored.
        private let hasResponded = Locked(false)
        /// The form of a `POST` being read, until its end.
        private let form = Locked<Form?>(nil)

        init(
            path: String, waiter: RedirectWaiter, expectedState: Locked<String?>, acceptsFormPost: Locked<Bool>,
            maximumFormSize: Int
        ) {
            self.path = path
            self.waiter = waiter
            self.expectedState = expectedState
            self.acceptsFormPost = acceptsFormPost
            self.maximumFormSize = maximumFormSize
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): read(head, context: context)
            case .body(var chunk):
                let tooLarge = form.withLock { form -> HTTPVersion? in
                    guard let current = form else { return nil }
                    guard current.body.readableBytes + chunk.readableBytes <= maximumFormSize else {
                        form = nil
                        return current.version
                    }
                    form?.body.writeBuffer(&chunk)
                    return nil
                }
                if let version = tooLarge {
                    respond(context, version: version, status: .payloadTooLarge, page: "The form is too large.")
                }
            case .end:
                guard
                    let posted = form.withLock({ form -> Form? in
                        defer { form = nil }
                        return form
                    })
                else { return }
                let body = String(decoding: posted.body.readableBytesView, as: UTF8.self)
                guard !body.contains("#"), let url = URL(string: "http://127.0.0.1\(path)?\(body)") else {
                    respond(context, version: posted.version, status: .badRequest, page: "The form is not valid.")
                    return
                }
                route(url, version: posted.version, context: context)
            }
        }

        private func read(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
            let isFirst = hasResponded.withLock { responded -> Bool in
                defer { responded = true }
                return !responded
            }
            guard isFirst else { return }
            let components = URLComponents(string: head.uri)
            guard components?.path == path else {
                respond(context, version: head.version, status: .notFound, page: "Not found.")
                return
            }
            switch head.method {
            case .GET:
                guard let url = URL(string: "http://127.0.0.1\(head.uri)") else {
                    respond(context, version: head.version, status: .notFound, page: "Not found.")
                    return
                }
                route(url, version: head.version, context: context)
            case .POST where acceptsFormPost.withLock({ $0 }):
                let type = head.headers.first(name: "Content-Type")?.lowercased() ?? ""
                guard
                    type.split(separator: ";").first?.trimmingCharacters(in: .whitespaces)
                        == "application/x-www-form-urlencoded"
                else {
                    respond(context, version: head.version, status: .unsupportedMediaType, page: "Not a form.")
                    return
                }
                let buffer = context.channel.allocator.buffer(capacity: 0)
                form.withLock { $0 = Form(version: head.version, body: buffer) }
            default:
                respond(context, version: head.version, status: .methodNotAllowed, page: "Not allowed.")
            }
        }

        /// Ends the flow with `url` when it carries the expected state; otherwise answers with an
        /// error page and keeps waiting.
        private func route(_ url: URL, version: HTTPVersion, context: ChannelHandlerContext) {
            let expected = expectedState.withLock { $0 }
            guard let expected, let state = RedirectState.state(of: url),
                constantTimeEqual(state, expected)
            else {
                respond(
                    context,
                    version: version,
                    status: .badRequest,
                    page: "This is not the response to the sign-in in progress. Return to the application."
                )
                return
            }
            let failed = RedirectState.parameter("error", of: url) != nil
            let waiter = self.waiter
            // The flow goes on once the page is on its way, so the browser is answered before the
            // listening socket closes.
            respond(
                context,
                version: version,
                status: .ok,
                page: failed
                    ? "Sign-in did not complete. You can close this tab and return to the application."
                    : "Sign-in finished. You can close this tab and return to the application."
            ) {
                waiter.finish(.success(url))
            }
        }

        /// A request that is not HTTP: SwiftNIO's protocol error handler has answered `400` with
        /// `Connection: close`; close the connection now rather than at the idle deadline.
        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        private func respond(
            _ context: ChannelHandlerContext,
            version: HTTPVersion,
            status: HTTPResponseStatus,
            page: String,
            then: @escaping @Sendable () -> Void = {}
        ) {
            let html =
                "<!doctype html><html><head><meta charset=\"utf-8\"><title>Sign-in</title></head><body><p>\(page)</p></body></html>"
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
            headers.add(name: "Content-Length", value: "\(html.utf8.count)")
            headers.add(name: "Connection", value: "close")
            headers.add(name: "Cache-Control", value: "no-store")
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: headers))),
                promise: nil)
            var buffer = context.channel.allocator.buffer(capacity: html.utf8.count)
            buffer.writeString(html)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                channel.close(promise: nil)
                then()
            }
        }
    }
#endif
