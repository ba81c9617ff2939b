import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The default ``HTTPTransport``: a `URLSession` whose session-level delegate removes the
/// `Authorization` header when a redirect leaves the origin of the original request.
///
/// The delegate is session-level on purpose: on Linux, `URLSession` calls
/// `willPerformHTTPRedirection` only on the session's delegate, and forwards a manually set
/// `Authorization` header to any host it is redirected to unless told otherwise.
public final class URLSessionTransport: HTTPTransport {
    /// One transport shared by every resource that does not name its own.
    public static let shared = URLSessionTransport()

    private let session: URLSession

    /// Creates a transport with its own session.
    /// - Parameter configuration: the session's configuration; `.default` unless given.
    public init(configuration: URLSessionConfiguration = .default) {
        session = URLSession(
            configuration: configuration,
            delegate: CrossOriginRedirectGuard(),
            delegateQueue: nil
        )
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// Sends `request` through the session.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch let error as URLError where error.code == .cancelled && Task.isCancelled {
            // URLSession reports task cancellation as URLError(.cancelled); callers expect
            // the structured-concurrency error.
            throw CancellationError()
        }
        guard let httpResponse = response as? HTTPURLResponse else {
            throw URLError(.badServerResponse)
        }
        return (data, httpResponse)
    }
}

/// Strips credentials from a redirect that leaves the origin of the original request.
final class CrossOriginRedirectGuard: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(Self.redirect(request, from: task.originalRequest?.url))
    }

    /// The request to follow: `request` itself on the same origin, otherwise a copy without
    /// the headers that carry credentials.
    static func redirect(_ request: URLRequest, from originalURL: URL?) -> URLRequest {
        guard let originalURL, let target = request.url, let origin = Origin(originalURL), origin == Origin(target)
        else {
            return request.removingCredentialHeaders()
        }
        return request
    }
}
