import AuthenticatedRequests
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A small HTTP/1.1 server on 127.0.0.1 for tests: answers with a closure and records what it saw.
package final class LoopbackHTTPServer: Sendable {
    package struct Request: Sendable {
        package let method: String
        package let uri: String
        package let headers: [(String, String)]
        package let body: Data

        package func header(_ name: String) -> String? {
            headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
        }
    }

    package struct Reply: Sendable {
        package var status: Int
        package var headers: [(String, String)]
        package var body: Data

        package init(status: Int = 200, headers: [(String, String)] = [], body: String = "") {
            self.status = status
            self.headers = headers
            self.body = Data(body.utf8)
        }
    }

    package typealias Handler = @Sendable (Request) -> Reply

    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let recorded = Locked<[Request]>([])

    package var port: Int { channel.localAddress?.port ?? 0 }
    package var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    package var requests: [Request] { recorded.withLock { $0 } }

    package init(_ handler: @escaping Handler) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let recorded = self.recorded
        self.group = group
        self.channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(RequestHandler(handler: handler, recorded: recorded))
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

private final class RequestHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let handler: LoopbackHTTPServer.Handler
    let recorded: Locked<[LoopbackHTTPServer.Request]>
    var head: HTTPRequestHead?
    var body = Data()

    init(handler: @escaping LoopbackHTTPServer.Handler, recorded: Locked<[LoopbackHTTPServer.Request]>) {
        self.handler = handler
        self.recorded = recorded
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = Data()
        case .body(var buffer):
            body.append(contentsOf: buffer.readBytes(length: buffer.readableBytes) ?? [])
        case .end:
            guard let head else { return }
            let request = LoopbackHTTPServer.Request(
                method: head.method.rawValue,
                uri: head.uri,
                headers: head.headers.map { ($0.name, $0.value) },
                body: body
            )
            recorded.withLock { $0.append(request) }
            let reply = handler(request)
            var headers = HTTPHeaders(reply.headers)
            headers.replaceOrAdd(name: "Content-Length", value: "\(reply.body.count)")
            let responseHead = HTTPResponseHead(
                version: head.version,
                status: HTTPResponseStatus(statusCode: reply.status),
                headers: headers
            )
            context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
            var buffer = context.channel.allocator.buffer(capacity: reply.body.count)
            buffer.writeBytes(reply.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            self.head = nil
        }
    }
}
