import AuthenticatedRequests
import Foundation

/// The answer of a pushed authorization request (RFC 9126 §2.2): the `request_uri` that stands
/// for the pushed parameters in the browser, and how long it is valid.
public struct PushedAuthorizationResponse: Sendable, Hashable {
    /// `request_uri`: one-time, short-lived reference to the pushed request.
    public let requestURI: String
    /// `expires_in`: the reference's lifetime in seconds.
    public let expiresIn: TimeInterval
    /// When the reference expires, counted from when the request was sent.
    public let expiresAt: Date
}

/// An authorization server's pushed authorization request endpoint (RFC 9126): the client posts
/// its authorization request, authenticated as at the token endpoint, and opens only `client_id`
/// and the returned `request_uri` in the browser.
public struct PushedAuthorizationEndpoint: Sendable {
    /// The endpoint's URL.
    public let url: URL
    /// How the client authenticates (the same as at the token endpoint; a `private_key_jwt`
    /// assertion names this endpoint as its audience).
    public let client: ClientAuthentication

    /// Creates a pushed authorization request endpoint client.
    public init(url: URL, client: ClientAuthentication) {
        self.url = url
        self.client = client
    }

    /// Pushes the parameters of an authorization request (RFC 9126 §2.1). Redirects are not
    /// followed; the reply is capped and strictly parsed like a token response.
    ///
    /// - Throws: `OAuthError` for an error body (e.g. `invalid_request`), ``TokenEndpointError``
    ///   for a reply without a usable `request_uri` or `expires_in`, or a transport error.
    public func push(_ parameters: [(String, String)], context: AuthenticationContext) async throws
        -> PushedAuthorizationResponse
    {
        // `client_id` is sent once: by the client authentication where it adds it (RFC 9126 §2.1).
        var parameters = parameters.filter { $0.0 != "client_id" }
        if !client.addsClientIDToBody { parameters.insert(("client_id", client.clientID), at: 0) }
        let reply = try await FormPost.send(parameters, to: url, client: client, context: context)
        return try Self.response(from: reply, now: context.clock.now)
    }

    /// Parses a pushed authorization response (RFC 9126 §2.2, status 201 or any 2xx).
    package static func response(from reply: ServerReply, now: Date) throws -> PushedAuthorizationResponse {
        let fields = try FormPost.jsonObject(from: reply, now: now)
        guard let requestURI = fields["request_uri"]?.stringValue, !requestURI.isEmpty else {
            throw TokenEndpointError(
                .missingField, "The pushed authorization response has no request_uri.", reply: reply,
                field: "request_uri")
        }
        guard requestURI.utf8.count <= 2048, requestURI.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) })
        else {
            throw TokenEndpointError(
                .invalidField, "The request_uri is longer than 2048 characters or not printable ASCII.",
                reply: reply, field: "request_uri")
        }
        guard
            let expiresIn = try ServerNumber.seconds(
                fields["expires_in"], ServerNumber.deviceCodeLifetime, in: reply)
        else {
            throw TokenEndpointError(
                .missingField, "The pushed authorization response has no expires_in.", reply: reply,
                field: "expires_in")
        }
        return PushedAuthorizationResponse(
            requestURI: requestURI, expiresIn: expiresIn, expiresAt: reply.sentAt.addingTimeInterval(expiresIn))
    }
}
