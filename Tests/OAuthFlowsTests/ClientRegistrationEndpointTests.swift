import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 7591 registration and RFC 7592 management, in memory: what is sent, what comes back, and
/// the server's errors with their descriptions.
@Suite struct ClientRegistrationEndpointTests {
    let seen = Locked<[URLRequest]>([])
    let redirect = URL(string: "http://127.0.0.1/callback")!

    func context(_ reply: @escaping @Sendable (URLRequest) throws -> (Data, ResponseHead)) -> AuthenticationContext {
        let seen = self.seen
        return AuthenticationContext(
            transport: InMemoryTransport { request in
                seen.withLock { $0.append(request) }
                return try reply(request)
            }, clock: TestClock())
    }

    static let managed = #"""
        {"client_id":"c1","client_secret":"s3cr3t-value","client_secret_expires_at":0,
         "redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"client_secret_post",
         "registration_access_token":"reg-token-123","registration_client_uri":"https://auth.example.com/register/c1"}
        """#

    @Test func registerSendsJSONWithTheInitialAccessTokenAndReadsTheReply() async throws {
        let endpoint = ClientRegistrationEndpoint(
            url: URL(string: "https://auth.example.com/register")!, issuer: "https://auth.example.com")
        let client = try await endpoint.register(
            ClientMetadata(
                clientName: "Notes", redirectURIs: [redirect], tokenEndpointAuthMethod: "client_secret_post",
                softwareStatement: "eyJ.statement.sig"),
            initialAccessToken: "initial-123",
            context: context { try InMemoryTransport.reply(to: $0, status: 201, json: Self.managed) })
        let request = try #require(seen.withLock { $0.first })
        #expect(request.httpMethod == "POST")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer initial-123")
        let body = try #require(try JSONSerialization.jsonObject(with: request.httpBody ?? Data()) as? [String: Any])
        #expect(body["software_statement"] as? String == "eyJ.statement.sig")
        #expect(body["application_type"] as? String == "native")
        #expect(client.clientAuthentication.methodName == "client_secret_post")
        #expect(client.registrationClientURI?.absoluteString == "https://auth.example.com/register/c1")
        #expect(!"\(client)".contains("s3cr3t-value") && !"\(client)".contains("reg-token-123"))
    }

    @Test func readAndDeleteUseTheRegistrationAccessToken() async throws {
        let endpoint = ClientRegistrationEndpoint(
            url: URL(string: "https://auth.example.com/register")!, issuer: "https://auth.example.com")
        let client = try RegisteredClient(
            fields: try #require(try JSONValue(parsing: Data(Self.managed.utf8)).objectValue),
            issuer: "https://auth.example.com")
        let context = context { request in
            request.httpMethod == "DELETE"
                ? try InMemoryTransport.reply(to: request, status: 204)
                : try InMemoryTransport.reply(to: request, json: Self.managed)
        }
        let read = try await endpoint.read(client, context: context)
        #expect(read.clientID == "c1")
        let updated = try await endpoint.update(
            client,
            to: ClientMetadata(
                clientName: "Notes 2", redirectURIs: [redirect],
                tokenEndpointAuthMethod: "client_secret_post"), context: context)
        #expect(updated.clientID == "c1")
        try await endpoint.delete(client, context: context)
        let requests = seen.withLock { $0 }
        #expect(requests.map { $0.httpMethod ?? "GET" } == ["GET", "PUT", "DELETE"])
        let put = try #require(try JSONSerialization.jsonObject(with: requests[1].httpBody ?? Data()) as? [String: Any])
        #expect(put["client_id"] as? String == "c1" && put["client_name"] as? String == "Notes 2")
        #expect(requests.allSatisfy { $0.url?.absoluteString == "https://auth.example.com/register/c1" })
        #expect(requests.allSatisfy { $0.value(forHTTPHeaderField: "Authorization") == "Bearer reg-token-123" })

        let unmanaged = try RegisteredClient(
            fields: ["client_id": .string("c2"), "token_endpoint_auth_method": .string("none")],
            issuer: "https://auth.example.com")
        let error = await #expect(throws: ClientRegistrationError.self) {
            try await endpoint.delete(unmanaged, context: context)
        }
        #expect(error?.code == .unavailable)
    }

    /// What the fuzzer found: a reply whose registration access token (or secret) equals its
    /// client_id would put that "secret" in every message naming the client. Refused.
    @Test(arguments: ["registration_access_token", "client_secret"])
    func aSecretEqualToTheClientIDIsRefused(field: String) throws {
        var fields: [String: JSONValue] = [
            "client_id": .string("s6BhdRkqt3"), "client_secret": .string("cf1x83-other"),
            "token_endpoint_auth_method": .string("client_secret_basic"),
        ]
        fields[field] = .string("s6BhdRkqt3")
        let error = #expect(throws: ClientRegistrationError.self) {
            try RegisteredClient(fields: fields, issuer: "https://auth.example.com")
        }
        #expect(error?.code == .invalidResponse)
        // Inside the client_id too (the fuzzer's second find), when long enough to be a secret.
        fields["client_id"] = .string("s6BhdRkqt3-callback")
        #expect(throws: ClientRegistrationError.self) {
            try RegisteredClient(fields: fields, issuer: "https://auth.example.com")
        }
    }

    @Test func theServersRegistrationErrorKeepsItsDescription() async throws {
        let endpoint = ClientRegistrationEndpoint(
            url: URL(string: "https://auth.example.com/register")!, issuer: "https://auth.example.com")
        let error = await #expect(throws: OAuthError.self) {
            _ = try await endpoint.register(
                ClientMetadata(redirectURIs: [redirect]),
                context: context {
                    try InMemoryTransport.reply(
                        to: $0, status: 400,
                        json: #"{"error":"invalid_redirect_uri","error_description":"loopback not allowed"}"#)
                })
        }
        #expect(error?.code.rawValue == "invalid_redirect_uri")
        #expect(error?.errorDescription == "loopback not allowed")
    }

    @Test func nothingIsSentToAPlainHTTPEndpointOrForInvalidMetadata() async throws {
        let plain = ClientRegistrationEndpoint(
            url: URL(string: "http://auth.example.com/register")!, issuer: "http://auth.example.com")
        let insecure = await #expect(throws: ClientRegistrationError.self) {
            _ = try await plain.register(
                ClientMetadata(redirectURIs: [redirect]), context: context { _ in throw URLError(.badURL) })
        }
        #expect(insecure?.code == .insecureEndpoint)
        let endpoint = ClientRegistrationEndpoint(
            url: URL(string: "https://auth.example.com/register")!, issuer: "https://auth.example.com")
        let invalid = await #expect(throws: ClientRegistrationError.self) {
            _ = try await endpoint.register(
                ClientMetadata(redirectURIs: [URL(string: "http://evil.example/cb")!]),
                context: context { _ in throw URLError(.badURL) })
        }
        #expect(invalid?.code == .invalidClientMetadata)
        #expect(seen.withLock { $0.isEmpty })
    }
}
