import AuthenticatedRequests
import Foundation

/// An authorization server's client registration endpoint (RFC 7591), and the RFC 7592
/// management of a registration it returned.
///
/// ```swift
/// let endpoint = try ClientRegistrationEndpoint(metadata: serverMetadata)
/// let client = try await endpoint.register(ClientMetadata(
///     clientName: "Notes", redirectURIs: [URL(string: "http://127.0.0.1/callback")!]), context: context)
/// ```
///
/// The reply is untrusted input: bounded like every authorization server reply, parsed strictly,
/// and checked against what was asked (``RegisteredClient/init(fields:issuer:requested:)``).
public struct ClientRegistrationEndpoint: Sendable {
    /// The endpoint's URL.
    public let url: URL
    /// The issuer of the server it belongs to; registrations are kept under it.
    public let issuer: String

    /// Creates an endpoint client.
    public init(url: URL, issuer: String) {
        self.url = url
        self.issuer = issuer
    }

    /// The endpoint that `metadata` names as `registration_endpoint`.
    ///
    /// - Throws: ``ClientRegistrationError/Code/unavailable`` when it names none.
    public init(metadata: AuthorizationServerMetadata) throws {
        guard let text = metadata.fields["registration_endpoint"]?.stringValue, let url = URL(string: text) else {
            throw ClientRegistrationError(
                .unavailable, "The authorization server \(metadata.issuer) has no registration_endpoint.")
        }
        self.init(url: url, issuer: metadata.issuer)
    }

    /// Registers a client (RFC 7591 §3.1).
    ///
    /// - Parameters:
    ///   - metadata: what the client is; checked with ``ClientMetadata/validate()`` first.
    ///   - initialAccessToken: a token the server requires for registration, if any.
    ///   - context: transport and clock.
    /// - Throws: ``ClientRegistrationError``; `OAuthError` for an RFC 7591 §3.2.2 error;
    ///   ``TokenEndpointError`` for a reply that is neither.
    public func register(
        _ metadata: ClientMetadata,
        initialAccessToken: String? = nil,
        context: AuthenticationContext
    ) async throws -> RegisteredClient {
        try metadata.validate()
        let reply = try await send(
            metadata.fields, method: "POST", to: url, token: initialAccessToken, context: context)
        let fields = try FormPost.jsonObject(from: reply, now: context.clock.now)  // an error body: OAuthError
        guard reply.statusCode == 201 || reply.statusCode == 200 else {
            throw TokenEndpointError(
                .unexpectedStatus, "The registration endpoint answered \(reply.statusCode), not 201.", reply: reply)
        }
        return try RegisteredClient(fields: fields, issuer: issuer, requested: metadata)
    }

    /// Reads the registration as the server now holds it (RFC 7592 §2.1).
    ///
    /// - Throws: ``ClientRegistrationError/Code/unavailable`` when the registration has no
    ///   `registration_client_uri` or `registration_access_token`.
    public func read(_ client: RegisteredClient, context: AuthenticationContext) async throws -> RegisteredClient {
        let (uri, token) = try management(of: client)
        let reply = try await send(nil, method: "GET", to: uri, token: token, context: context)
        return try RegisteredClient(fields: FormPost.jsonObject(from: reply, now: context.clock.now), issuer: issuer)
    }

    /// Replaces the registration's metadata (RFC 7592 §2.2): `metadata` is sent whole, with the
    /// `client_id`; the reply is checked like a registration's and may carry a new secret.
    public func update(
        _ client: RegisteredClient, to metadata: ClientMetadata, context: AuthenticationContext
    ) async throws -> RegisteredClient {
        try metadata.validate()
        let (uri, token) = try management(of: client)
        var fields = metadata.fields
        fields["client_id"] = .string(client.clientID)
        let reply = try await send(fields, method: "PUT", to: uri, token: token, context: context)
        let answer = try FormPost.jsonObject(from: reply, now: context.clock.now)
        guard answer["client_id"]?.stringValue == client.clientID else {
            throw ClientRegistrationError(.invalidResponse, "The updated registration names another client_id.")
        }
        return try RegisteredClient(fields: answer, issuer: issuer, requested: metadata)
    }

    /// Deletes the registration (RFC 7592 §2.3): the client id stops working.
    public func delete(_ client: RegisteredClient, context: AuthenticationContext) async throws {
        let (uri, token) = try management(of: client)
        let reply = try await send(nil, method: "DELETE", to: uri, token: token, context: context)
        guard reply.statusCode == 204 || reply.statusCode == 200 else {
            _ = try FormPost.jsonObject(from: reply, now: context.clock.now)  // an OAuth error, if it is one
            throw TokenEndpointError(
                .unexpectedStatus, "The registration was not deleted (status \(reply.statusCode)).", reply: reply)
        }
    }

    private func management(of client: RegisteredClient) throws -> (URL, String) {
        guard let uri = client.registrationClientURI, let token = client.registrationAccessToken else {
            throw ClientRegistrationError(
                .unavailable, "The server returned no registration_client_uri and registration_access_token.")
        }
        return (uri, token)
    }

    private func send(
        _ object: [String: JSONValue]?, method: String, to url: URL, token: String?, context: AuthenticationContext
    ) async throws -> ServerReply {
        do {
            return try await FormPost.json(object, method: method, to: url, bearer: token, context: context)
        } catch let error as TokenEndpointError where error.code == .insecureEndpoint {
            throw ClientRegistrationError(.insecureEndpoint, error.message)
        }
    }
}
