import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One endpoint of an HTTP API: how to build its request from an `Input`, and how to turn the
/// response into an `Output`.
///
/// ```swift
/// struct GetUser: Resource {
///     typealias Output = User            // any Decodable; also Data, String or Void
///     let id: String
///
///     func urlRequest(using input: Void) throws -> URLRequest {
///         URLRequest(url: URL(string: "https://api.example.com/users/\(id)")!)
///     }
/// }
///
/// let user = try await GetUser(id: "42").request()
/// ```
///
/// Every step after building the request has a default you can replace: ``transport``,
/// ``perform(_:)``, ``validate(_:body:)``, ``decode(_:from:)``.
public protocol Resource: Sendable {
    /// What the caller passes to ``request(using:)``; `Void` when the resource needs nothing.
    associatedtype Input = Void
    /// What ``request(using:)`` returns: a `Decodable` type, `Data`, `String` or `Void`.
    associatedtype Output

    /// The request method; `GET` unless given. It replaces any method set by ``urlRequest(using:)``.
    var httpMethod: RequestMethod { get }

    /// Builds the request for `input`. Throw to refuse an input; the error reaches the caller
    /// wrapped in a ``ResourceError`` with code ``ResourceError/Code/invalidRequest``.
    func urlRequest(using input: Input) throws -> URLRequest

    /// The transport that sends the request; ``URLSessionTransport/shared`` unless given.
    var transport: any HTTPTransport { get }

    /// The decoder for `Decodable` outputs; a plain `JSONDecoder` unless given.
    var decoder: JSONDecoder { get }

    /// Sends a built request and returns the raw reply. Plain resources send it through
    /// ``transport``; an ``AuthenticatedResource`` sends it through its authenticator.
    ///
    /// The request is `consuming`: the authenticator adds its header to the caller's own copy
    /// instead of cloning it (a clone of a `URLRequest` costs microseconds on Linux).
    func perform(_ urlRequest: consuming URLRequest) async throws -> (Data, ResponseHead)

    /// Accepts or rejects a response before decoding; by default accepts `2xx` and throws a
    /// ``ResourceError`` with code ``ResourceError/Code/unacceptableStatus`` otherwise.
    func validate(_ response: ResponseHead, body: Data) throws

    /// Turns a validated body into the output. Defaults exist for `Decodable` (JSON),
    /// `Data`, `String` (UTF-8) and `Void` (body ignored).
    func decode(_ body: Data, from response: ResponseHead) throws -> Output
}

extension Resource {
    /// `GET`.
    public var httpMethod: RequestMethod { .get }

    /// ``URLSessionTransport/shared``.
    public var transport: any HTTPTransport { URLSessionTransport.shared }

    /// A new `JSONDecoder` with default settings.
    public var decoder: JSONDecoder { JSONDecoder() }

    /// Sends the request through ``transport``.
    public func perform(_ urlRequest: consuming URLRequest) async throws -> (Data, ResponseHead) {
        try await transport.send(urlRequest)
    }

    /// Accepts `200...299`.
    public func validate(_ response: ResponseHead, body: Data) throws {
        guard (200...299).contains(response.statusCode) else {
            throw ResourceError.unacceptableStatus(response: response, body: body)
        }
    }

    /// Sends the resource's request for `input` and returns the decoded output.
    ///
    /// The steps, in order: ``urlRequest(using:)``, ``httpMethod`` applied, ``perform(_:)``
    /// (the wire, and for an ``AuthenticatedResource`` the credential, refresh and retry),
    /// ``validate(_:body:)``, ``decode(_:from:)``.
    ///
    /// - Throws: ``ResourceError`` for a request that could not be built, a transport failure,
    ///   an unacceptable status or an undecodable body; ``AuthenticationError`` (and the errors
    ///   it wraps) when no valid credential could be had; ``StepUpError`` when the resource asks
    ///   for a step-up that cannot be given; `CancellationError` when cancelled.
    public func request(using input: Input) async throws -> Output {
        var urlRequest: URLRequest
        do {
            urlRequest = try self.urlRequest(using: input)
        } catch {
            throw ResourceError(code: .invalidRequest, underlyingError: error)
        }
        let method = httpMethod.rawValue
        // Setting it when it is already right costs ~2,300 instructions on Linux, where Foundation
        // compares the new method against six names without case.
        if urlRequest.httpMethod != method { urlRequest.httpMethod = method }
        let url = urlRequest.url

        let body: Data
        let response: ResponseHead
        do {
            (body, response) = try await perform(consume urlRequest)
        } catch let error as ResourceError {
            throw error
        } catch let error as AuthenticationError {
            throw error
        } catch let error as StepUpError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ResourceError(
                code: .transportFailed, method: method, url: url, response: nil, body: nil, underlyingError: error,
                removing: secretsInPlay)
        }

        do {
            try validate(response, body: body)
        } catch let error as ResourceError {
            // Rebuilt from the whole body, so a credential the server echoed is left out even
            // where the snippet would cut it in half.
            throw error.completed(method: method, url: url, body: body, removing: secretsInPlay)
        }
        do {
            return try decode(body, from: response)
        } catch {
            throw ResourceError(
                code: .decodingFailed,
                method: method,
                url: url,
                response: response,
                body: body,
                underlyingError: error,
                removing: secretsInPlay
            )
        }
    }

    /// The secrets of the credentials this resource's authenticator applies (current and
    /// the ones it replaced, with their refresh tokens), to leave out of errors; none for a plain resource.
    /// Read only when an error is made.
    private var secretsInPlay: [String] {
        ((self as? any AuthenticatedResource)?.authenticator as? any SecretHolding)?.secretsInPlay() ?? []
    }
}

extension Resource where Input == Void {
    /// Sends the resource's request; shorthand for `request(using: ())`.
    public func request() async throws -> Output {
        try await request(using: ())
    }
}
