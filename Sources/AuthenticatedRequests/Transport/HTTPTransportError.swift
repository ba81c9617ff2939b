import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Why no acceptable HTTP reply arrived: every transport of this package reports each class of
/// network failure as one of these codes, with the transport's own error kept in
/// ``underlyingError``.
///
/// Switch on ``code``; the set of codes can grow. ``description`` is one sentence for people:
/// what failed, on which host, and why, e.g. "GET https://127.0.0.1:9/token failed: 127.0.0.1:9
/// refused the connection (nothing listens there). [NSURLErrorDomain -1004]".
public struct HTTPTransportError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The deadline passed before the whole reply arrived; the request was cancelled.
        public static let timedOut = Code("timed out")
        /// The reply's body is larger than allowed.
        public static let responseTooLarge = Code("response too large")
        /// The server answered with a redirect where none may be followed.
        public static let redirected = Code("redirected")
        /// The host refused the connection: nothing listens on that port.
        public static let connectionRefused = Code("connection refused")
        /// The connection was reset or closed before the whole reply arrived.
        public static let connectionLost = Code("connection lost")
        /// The host name could not be resolved (DNS).
        public static let hostNotFound = Code("host not found")
        /// The TLS handshake failed: an untrusted or expired certificate, or a server that does
        /// not speak TLS.
        public static let tlsFailed = Code("TLS failed")
        /// This machine has no network connection.
        public static let notConnected = Code("not connected")
        /// Another failure of the connection or of the reply's framing; see
        /// ``HTTPTransportError/underlyingError``.
        public static let failed = Code("failed")
        /// The code's name.
        public var description: String { name }
    }

    /// The kind of failure.
    public let code: Code
    /// What happened, for people; names URLs without query, never a secret.
    public let message: String
    /// The redirect's status, for ``Code/redirected`` when known.
    public let statusCode: Int?
    /// The origin the redirect pointed to, for ``Code/redirected`` (scheme, host, port).
    public let redirectOrigin: String?
    /// The origin the request went to (scheme, host, port), when known.
    public let origin: String?
    /// The transport's own error (a `URLError`, a SwiftNIO or AsyncHTTPClient error), kept for
    /// programs that need its details.
    public let underlyingError: (any Error)?

    package init(
        code: Code,
        message: String,
        statusCode: Int? = nil,
        redirectOrigin: String? = nil,
        origin: String? = nil,
        underlyingError: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.statusCode = statusCode
        self.redirectOrigin = redirectOrigin
        self.origin = origin
        self.underlyingError = underlyingError
    }

    /// The error for a failure of class `code` while sending `request`: one sentence naming the
    /// request, the host and the reason, with the underlying error's domain and number.
    package init(_ code: Code, sending request: URLRequest?, underlyingError: (any Error)?) {
        let url = request?.url
        let origin = url.flatMap(Origin.init)
        let place = origin?.authority ?? "the server"
        let reason: String
        switch code {
        case .connectionRefused: reason = "\(place) refused the connection (nothing listens there)"
        case .connectionLost: reason = "the connection to \(place) was reset or closed before the reply was complete"
        case .hostNotFound: reason = "the host name \(url?.host ?? "of the URL") could not be resolved (DNS)"
        case .tlsFailed: reason = "the TLS handshake with \(place) failed (certificate or protocol)"
        case .notConnected: reason = "this machine is not connected to a network"
        case .timedOut: reason = "\(place) did not answer in time"
        default: reason = "no usable reply from \(place)"
        }
        let what = url.map { "\(request?.httpMethod ?? "GET") \($0.redactedForDisplay)" } ?? "The request"
        var message = "\(what) failed: \(reason)."
        if let number = underlyingError.map(Self.number(of:)) { message += " [\(number)]" }
        self.init(code: code, message: message, origin: origin?.display, underlyingError: underlyingError)
    }

    /// `NSURLErrorDomain -1004`, `POSIX 111`, or the error's type: what identifies it for support.
    private static func number(of error: any Error) -> String {
        switch error {
        case is URLError, is POSIXError, is CocoaError:
            let error = error as NSError
            return "\(error.domain) \(error.code)"
        default:
            return String(describing: type(of: error))
        }
    }

    package static func timedOut(after seconds: TimeInterval, url: URL?) -> HTTPTransportError {
        HTTPTransportError(
            code: .timedOut,
            message: "No complete reply from \(url?.redactedForDisplay ?? "the server") within "
                + "\(seconds.formattedSeconds) seconds; the request was cancelled.",
            origin: url.flatMap(Origin.init)?.display
        )
    }

    package static func responseTooLarge(limit: Int, url: URL?) -> HTTPTransportError {
        HTTPTransportError(
            code: .responseTooLarge,
            message: "The reply from \(url?.redactedForDisplay ?? "the server") is larger than \(limit) bytes.",
            origin: url.flatMap(Origin.init)?.display
        )
    }

    /// The error for a redirect that must not be followed.
    package static func redirected(status: Int?, from request: URL, to target: URL?) -> HTTPTransportError {
        let origin = target.flatMap(Origin.init).map(\.display)
        var message = "\(request.redactedForDisplay) answered with a redirect"
        if let status { message += " (status \(status))" }
        message += " to \(origin ?? "an unknown place"); requests that carry a secret never follow redirects."
        return HTTPTransportError(
            code: .redirected, message: message, statusCode: status, redirectOrigin: origin,
            origin: Origin(request)?.display)
    }

    /// `error` as an ``HTTPTransportError`` when it is a `URLError` or `POSIXError` of a known class
    /// (what `URLSession` and the socket layer throw); `CancellationError` and errors of other
    /// kinds unchanged.
    package static func classifying(_ error: any Error, sending request: URLRequest) -> any Error {
        switch error {
        case is HTTPTransportError, is CancellationError:
            return error
        case let error as URLError:
            return HTTPTransportError(code(of: error), sending: request, underlyingError: error)
        case let error as POSIXError:
            guard let code = code(ofErrno: error.code.rawValue) else { return error }
            return HTTPTransportError(code, sending: request, underlyingError: error)
        default:
            return error
        }
    }

    /// The class of a `URLError`.
    package static func code(of error: URLError) -> Code {
        switch error.code {
        case .cannotConnectToHost: return .connectionRefused
        case .networkConnectionLost, .badServerResponse, .zeroByteResource, .cannotParseResponse:
            return .connectionLost
        case .timedOut: return .timedOut
        case .cannotFindHost, .dnsLookupFailed: return .hostNotFound
        case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
            .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
            .clientCertificateRequired:
            return .tlsFailed
        case .notConnectedToInternet, .internationalRoamingOff, .dataNotAllowed, .callIsActive:
            return .notConnected
        case .dataLengthExceedsMaximum: return .responseTooLarge
        case .httpTooManyRedirects, .redirectToNonExistentLocation: return .redirected
        case .unknown:
            // swift-corelibs-foundation reports libcurl's TLS failures as URLError(-1) with
            // OpenSSL's text ("OpenSSL/3.0: error:0A00010B:SSL routines::wrong version number").
            let text = (error as NSError).localizedDescription
            return text.contains("SSL") || text.contains("TLS") ? .tlsFailed : .failed
        default: return .failed
        }
    }

    /// The class of a socket `errno`, or `nil` when it names no network failure.
    package static func code(ofErrno number: Int32) -> Code? {
        switch number {
        case ECONNREFUSED: return .connectionRefused
        case ECONNRESET, ECONNABORTED, EPIPE, ENOTCONN: return .connectionLost
        case ETIMEDOUT: return .timedOut
        case ENETUNREACH, ENETDOWN, EHOSTUNREACH: return .notConnected
        default: return nil
        }
    }

    /// Whether the server never gave a complete answer (as opposed to an answer that was too
    /// large or a redirect): such a failure does not count as a refresh the server answered.
    package var isConnectivityFailure: Bool {
        code != .responseTooLarge && code != .redirected
    }

    /// `HTTPTransportError(code): message`.
    public var description: String { "HTTPTransportError(\(code)): \(message)" }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
