import AuthenticatedRequests
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTP server on 127.0.0.1 that misbehaves the way a broken or hostile server does, for tests
/// of deadlines and failure handling over real sockets.
package final class MisbehavingServer: Sendable {
    /// What the server does with each request.
    package enum Behavior: Sendable {
        /// Reads the request and never answers.
        case hang
        /// Sends a `200` head announcing `length` bytes, then one byte every `interval` seconds.
        case drip(interval: TimeInterval, length: Int)
        /// Closes the connection as soon as the request arrived.
        case reset
        /// Answers 200 with a chunked body (no `Content-Length`) of `count` parts of `size` bytes.
        case chunked(count: Int, size: Int)
        /// Sheds load: answers `status` (429, 503) with `Retry-After: seconds` and an OAuth error.
        case shed(status: Int, retryAfterSeconds: Int)
    }

    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let received = Locked(0)

    package var baseURL: URL { URL(string: "http://127.0.0.1:\(channel.localAddress?.port ?? 0)")! }
    /// How many requests arrived.
    package var requestCount: Int { received.withLock { $0 } }

    package init(_ behavior: Behavior) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let received = self.received
        self.group = group
        self.channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(MisbehavingHandler(behavior: behavior, received: received))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }

    package func shutdown() async throws {
        try await channel.close()
        try await group.shutdownGracefully()
    }
}

private final class MisbehavingHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let behavior: MisbehavingServer.Behavior
    let received: Locked<Int>

    init(behavior: MisbehavingServer.Behavior, received: Locked<Int>) {
        self.behavior = behavior
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        received.withLock { $0 += 1 }
        let channel = context.channel
        switch behavior {
        case .hang:
            break
        case .reset:
            channel.close(promise: nil)
        case .shed(let status, let seconds):
            let body = #"{"error":"temporarily_unavailable"}"#
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: "\(body.utf8.count)")
            headers.add(name: "Retry-After", value: "\(seconds)")
            let head = HTTPResponseHead(
                version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            var buffer = channel.allocator.buffer(capacity: body.utf8.count)
            buffer.writeString(body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        case .chunked(let count, let size):
            let head = HTTPResponseHead(
                version: .http1_1, status: .ok, headers: ["Transfer-Encoding": "chunked"])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            for _ in 0..<count {
                let buffer = channel.allocator.buffer(repeating: UInt8(ascii: "x"), count: size)
                context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        case .drip(let interval, let length):
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: "\(length)")
            context.writeAndFlush(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                promise: nil
            )
            let step = TimeAmount.nanoseconds(Int64(interval * 1e9))
            channel.eventLoop.scheduleRepeatedTask(initialDelay: step, delay: step) { task in
                guard channel.isActive else {
                    task.cancel()
                    return
                }
                var buffer = channel.allocator.buffer(capacity: 1)
                buffer.writeString(" ")
                channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer)), promise: nil)
            }
        }
    }
}
