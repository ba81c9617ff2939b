import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The one way this module talks to an authorization server: a form `POST` with client
/// authentication, `Accept: application/json`, and a capped, JSON-object reply.
enum FormPost {
    /// The largest body accepted from an authorization server.
    static let maximumBodySize = 1 << 20

    /// Posts `parameters` (plus the client's credentials) to `url`.
    static func send(
        _ parameters: [(String, String)],
        to url: URL,
        client: ClientAuthentication?,
        context: AuthenticationContext
    ) async throws -> (Data, HTTPURLResponse) {
        guard context.allowsInsecureHTTP || url.isSafeForSecrets else {
            throw TokenEndpointError(
                .insecureEndpoint,
                "Refusing to send client credentials to \(url.redactedForDisplay): use https or a loopback address."
            )
        }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        var parameters = parameters
        client?.authenticate(&request, parameters: &parameters)
        request.httpBody = Data(FormEncoding.encode(parameters).utf8)
        return try await context.transport.send(request)
    }

    /// The reply as a JSON object; an OAuth error body (any status) throws ``OAuthError``.
    static func jsonObject(from body: Data, response: HTTPURLResponse) throws -> [String: JSONValue] {
        let status = response.statusCode
        let contentType = response.value(forHTTPHeaderField: "Content-Type")
        guard body.count <= maximumBodySize else {
            throw TokenEndpointError(
                .responseTooLarge,
                "The response is \(body.count) bytes; at most \(maximumBodySize) are accepted.",
                statusCode: status,
                contentType: contentType,
                body: body
            )
        }
        let object: [String: JSONValue]
        do {
            object = try JSONDecoder().decode([String: JSONValue].self, from: body)
        } catch {
            throw TokenEndpointError(
                (200...299).contains(status) ? .invalidResponse : .unexpectedStatus,
                body.isEmpty ? "The response body is empty." : "The response is not a JSON object.",
                statusCode: status,
                contentType: contentType,
                body: body,
                underlyingError: error
            )
        }
        if let code = object["error"]?.stringValue {
            throw OAuthError(
                code: OAuthErrorCode(rawValue: code),
                errorDescription: object["error_description"]?.stringValue,
                errorURI: object["error_uri"]?.stringValue.flatMap(URL.init(string:)),
                statusCode: status,
                wwwAuthenticate: response.value(forHTTPHeaderField: "WWW-Authenticate")
            )
        }
        guard (200...299).contains(status) else {
            throw TokenEndpointError(
                .unexpectedStatus,
                "The server answered with an error status and no OAuth error.",
                statusCode: status,
                contentType: contentType,
                body: body
            )
        }
        return object
    }
}
