import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A reply from an authorization server, with the secrets the request carried, so that anything
/// the server echoes back can be redacted of them.
package struct ServerReply: Sendable {
    /// The URL the request went to.
    package let url: URL
    /// The request as sent.
    package let request: URLRequest
    package let body: Data
    package let response: ResponseHead
    /// The secrets sent (client secret, code, verifier, refresh token, device code, token).
    package let sentSecrets: [String]
    /// When the request was sent, by the context's clock.
    package let sentAt: Date

    package init(
        url: URL, request: URLRequest? = nil, body: Data, response: ResponseHead, sentSecrets: [String],
        sentAt: Date
    ) {
        self.url = url
        self.request = request ?? URLRequest(url: url)
        self.body = body
        self.response = response
        self.sentSecrets = sentSecrets
        self.sentAt = sentAt
    }

    package var statusCode: Int { response.statusCode }
    var contentType: String? { response.value(forHTTPHeaderField: "Content-Type") }
}

/// The one way this module talks to an authorization server: a form `POST` with client
/// authentication (or a `GET` for metadata), `Accept: application/json`, no redirects, a total
/// deadline, and a capped, strictly parsed JSON-object reply.
package enum FormPost {
    /// The largest body accepted from an authorization server.
    static let maximumBodySize = HTTPTransportOptions.authorizationServerResponseLimit

    /// Posts `parameters` (plus the client's credentials) to `url`. Whatever the reply says is
    /// redacted of the secrets sent, of every secret the client holds, and of `heldSecrets` (the
    /// token a refresh replaces).
    ///
    /// With `proof`, the request carries a DPoP proof signed with its key; when the server answers
    /// `use_dpop_nonce` with a nonce, the request is built afresh (a new proof, a new client
    /// assertion) and sent once more, never a third time (RFC 9449 §8).
    static func send(
        _ parameters: [(String, String)],
        to url: URL,
        client: ClientAuthentication?,
        context: AuthenticationContext,
        proof: (any ProofOfPossession, BoundKey)? = nil,
        alsoRemoving heldSecrets: [String] = []
    ) async throws -> ServerReply {
        try checkSafe(url, context: context)
        let post = {
            try await Self.post(parameters, to: url, client: client, context: context, proof: proof, heldSecrets)
        }
        let reply = try await post()
        guard let (proofOfPossession, _) = proof,
            proofOfPossession.didReceive(reply.response, error: oauthErrorCode(of: reply), for: reply.request)
        else { return reply }
        try Task.checkCancellation()
        let resent = try await post()
        _ = proofOfPossession.didReceive(resent.response, error: nil, for: resent.request)  // remember its nonce
        return resent
    }

    private static func post(
        _ parameters: [(String, String)],
        to url: URL,
        client: ClientAuthentication?,
        context: AuthenticationContext,
        proof: (any ProofOfPossession, BoundKey)?,
        _ heldSecrets: [String]
    ) async throws -> ServerReply {
        if let client, client.usesMutualTLS, try context.transport.clientCertificateThumbprint() == nil {
            throw TokenEndpointError(
                .invalidConfiguration,
                "\(client.methodName == "none" ? "Mutual TLS" : client.methodName) needs a transport that presents a "
                    + "client certificate, and this one presents none; nothing was sent to \(url.redactedForDisplay). "
                    + "Use AsyncHTTPClientTransport(clientIdentity:) as the token transport.")
        }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        var parameters = parameters
        let assertions = try await client?.authenticate(&request, parameters: &parameters) ?? []
        request.httpBody = Data(FormEncoding.encode(parameters).utf8)
        if let (proofOfPossession, key) = proof {
            try await proofOfPossession.prove(&request, with: key, accessToken: nil)
        }
        // What was sent, and what the client holds besides (its secret, a registration access
        // token, the token being refreshed): a reply may echo any of them.
        let secrets =
            parameters.filter { Redaction.secretNames.contains($0.0) }.map(\.1) + assertions
            + (client?.secretValues ?? []) + heldSecrets
        return try await exchange(request, secrets: secrets, context: context)
    }

    /// The OAuth error code of an error reply (status 400 or 401 with an `error` member), if any.
    private static func oauthErrorCode(of reply: ServerReply) -> OAuthErrorCode? {
        guard reply.statusCode == 400 || reply.statusCode == 401 else { return nil }
        do {
            _ = try jsonObject(from: reply, now: reply.sentAt)
        } catch let error as OAuthError {
            return error.code
        } catch {}
        return nil
    }

    /// Gets `url` (metadata, keys): the same rules, no client credentials.
    package static func get(_ url: URL, context: AuthenticationContext) async throws -> ServerReply {
        try checkSafe(url, context: context)
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return try await exchange(request, secrets: [], context: context)
    }

    /// Sends a JSON object (a client registration, RFC 7591 §3.1) with `method`, or no body when
    /// `object` is `nil`, and an optional bearer token (an initial or registration access token).
    package static func json(
        _ object: [String: JSONValue]?,
        method: String,
        to url: URL,
        bearer token: String?,
        context: AuthenticationContext
    ) async throws -> ServerReply {
        try checkSafe(url, context: context)
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let object {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            request.httpBody = try encoder.encode(JSONValue.object(object))
        }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        var secrets = [token].compactMap { $0 }
        if let statement = object?["software_statement"]?.stringValue { secrets.append(statement) }
        return try await exchange(request, secrets: secrets, context: context)
    }

    private static func checkSafe(_ url: URL, context: AuthenticationContext) throws {
        guard context.allowsInsecureHTTP || url.isSafeForSecrets else {
            throw TokenEndpointError(
                .insecureEndpoint,
                "Refusing to contact \(url.redactedForDisplay): use https or a loopback address."
            )
        }
    }

    private static func exchange(
        _ request: URLRequest,
        secrets: [String],
        context: AuthenticationContext
    ) async throws -> ServerReply {
        let sentAt = context.clock.now
        let (body, response) = try await context.transport.send(request, options: context.authorizationServerOptions)
        guard let url = request.url else { throw URLError(.badURL) }
        let reply = ServerReply(
            url: url, request: request, body: body, response: response, sentSecrets: secrets, sentAt: sentAt)
        if (300...399).contains(response.statusCode) {
            let location = response.value(forHTTPHeaderField: "Location").flatMap { URL(string: $0, relativeTo: url) }
            // A target that echoes a secret is not named.
            let named = location.flatMap {
                Redaction.redact($0.absoluteString, removing: secrets) == $0.absoluteString ? $0 : nil
            }
            throw HTTPTransportError.redirected(status: response.statusCode, from: url, to: named?.absoluteURL)
        }
        return reply
    }

    /// The reply as a JSON object; an OAuth error body (any status) throws `OAuthError`.
    package static func jsonObject(from reply: ServerReply, now: Date) throws -> [String: JSONValue] {
        let status = reply.statusCode
        let retryAfter =
            status == 429 || status == 503
            ? RetryAfter.date(fromHeader: reply.response.value(forHTTPHeaderField: "Retry-After"), now: now) : nil
        guard reply.body.count <= maximumBodySize else {
            throw TokenEndpointError(
                .responseTooLarge,
                "The response is \(reply.body.count) bytes; at most \(maximumBodySize) are accepted.",
                reply: reply,
                retryAfter: retryAfter
            )
        }
        let object: [String: JSONValue]
        do {
            guard case .object(let members) = try JSONValue(parsing: reply.body) else {
                throw JSONParsingError(reason: "the reply is not a JSON object", offset: 0)
            }
            object = members
        } catch {
            throw TokenEndpointError(
                (200...299).contains(status) ? .invalidResponse : .unexpectedStatus,
                reply.body.isEmpty ? "The response body is empty." : "The response is not a JSON object.",
                reply: reply,
                retryAfter: retryAfter,
                underlyingError: error
            )
        }
        if let code = object["error"]?.stringValue {
            // Everything the server wrote is redacted of what the request sent: the code and the
            // page's address too, so an echo cannot carry a secret into a message.
            let redact = { (text: String) in Redaction.redact(text, removing: reply.sentSecrets) }
            throw OAuthError(
                code: OAuthErrorCode(rawValue: redact(code)),
                errorDescription: object["error_description"]?.stringValue.map(redact),
                errorURI: object["error_uri"]?.stringValue.flatMap { uri in
                    redact(uri) == uri ? URL(string: uri) : nil
                },
                statusCode: status,
                wwwAuthenticate: reply.response.value(forHTTPHeaderField: "WWW-Authenticate").map(redact),
                retryAfter: retryAfter
            )
        }
        guard (200...299).contains(status) else {
            throw TokenEndpointError(
                .unexpectedStatus,
                "The server answered with an error status and no OAuth error.",
                reply: reply,
                retryAfter: retryAfter
            )
        }
        return object
    }
}
