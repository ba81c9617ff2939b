import AuthenticatedRequests
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTP listener on `127.0.0.1` and an ephemeral port that waits for one redirect to `path`
/// (RFC 8252 §7.3).
///
/// Requests for other paths (a favicon, a probe) get a 404 and are otherwise ignored. The
/// expected path gets a short page saying the sign-in finished or failed, never echoing the
/// query. ``close()`` closes the listening socket.
final class LoopbackRedirectReceiver: Sendable {
    private let channel: any Channel
    private let waiter: RedirectWaiter
    /// `http://127.0.0.1:<port><path>`.
    let redirectURI: URL

    private init(channel: any Channel, waiter: RedirectWaiter, redirectURI: URL) {
        self.channel = channel
        self.waiter = waiter
        self.redirectURI = redirectURI
    }

    /// Starts listening on an ephemeral port of `127.0.0.1`.
    static func start(path: String) async throws -> LoopbackRedirectReceiver {
        let waiter = RedirectWaiter()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 16)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(RedirectHandler(path: path, waiter: waiter))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port, let url = URL(string: "http://127.0.0.1:\(port)\(path)") else {
            try? await channel.close()
            throw CodeFlowError(.invalidConfiguration, "Could not listen on a loopback port.")
        }
        return LoopbackRedirectReceiver(channel: channel, waiter: waiter, redirectURI: url)
    }

    /// Waits for the redirect, at most `timeout` seconds; cancellable.
    func waitForRedirect(timeout: TimeInterval) async throws -> URL {
        let waiter = self.waiter
        let timer = Task {
            try await Task.sleep(nanoseconds: UInt64(max(timeout, 0) * 1_000_000_000))
            waiter.finish(.failure(CodeFlowError(.timedOut, "No redirect arrived within \(Int(timeout)) seconds.")))
        }
        defer { timer.cancel() }
        return try await waiter.wait()
    }

    /// Closes the listening socket; new connections are refused from then on.
    func close() async {
        waiter.finish(.failure(CancellationError()))
        try? await channel.close()
    }
}

/// Hands the first redirect (or failure) to the one waiting task.
final class RedirectWaiter: Sendable {
    private struct State {
        var result: Result<URL, any Error>?
        var continuation: CheckedContinuation<URL, any Error>?
    }

    private let state = Locked(State())

    /// Delivers the outcome; only the first one counts.
    func finish(_ result: Result<URL, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<URL, any Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }

    /// Waits for the outcome; cancellation ends the wait with `CancellationError`.
    func wait() async throws -> URL {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<URL, any Error>? in
                    if let result = state.result { return result }
                    state.continuation = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            finish(.failure(CancellationError()))
        }
    }
}

private final class RedirectHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let path: String
    private let waiter: RedirectWaiter

    init(path: String, waiter: RedirectWaiter) {
        self.path = path
        self.waiter = waiter
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        let components = URLComponents(string: head.uri)
        guard head.method == .GET, components?.path == path,
            let url = URL(string: "http://127.0.0.1\(head.uri)")
        else {
            respond(context, version: head.version, status: .notFound, page: "Not found.")
            return
        }
        let failed = components?.queryItems?.contains { $0.name == "error" } ?? true
        let waiter = self.waiter
        // The flow goes on once the page is on its way, so the browser is answered before the
        // listening socket closes.
        respond(
            context,
            version: head.version,
            status: .ok,
            page: failed
                ? "Sign-in did not complete. You can close this tab and return to the application."
                : "Sign-in finished. You can close this tab and return to the application."
        ) {
            waiter.finish(.success(url))
        }
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
            wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
        var buffer = context.channel.allocator.buffer(capacity: html.utf8.count)
        buffer.writeString(html)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            context.close(promise: nil)
            then()
        }
    }
}
