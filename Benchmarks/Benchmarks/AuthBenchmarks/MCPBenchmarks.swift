// Issue 26: what MCPAuthorizer costs per MCP request with a valid token, as the MCP Swift SDK's
// transport calls it: `prepareAuthorization` (a snapshot that needs no refresh returns at once),
// the synchronous `authorizationHeader`, and `modify` (nothing for a bearer token; a fresh proof,
// signed with the loaded key, for a DPoP-bound one). No I/O in any of them.
import AuthenticatedRequests
import Benchmark
import DPoP
import Foundation
import MCPAuthentication
import OAuthFlows
import RequestFixtures
import ResourceDiscovery

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An MCP server and its authorization server in memory: a 401 with RFC 9728 metadata, and the
/// client credentials grant for a pre-registered client, issuing tokens of `tokenType`.
private func mcpNetwork(tokenType: String) -> InMemoryTransport {
    InMemoryTransport { request in
        switch request.url?.absoluteString ?? "" {
        case "https://mcp.example.com/mcp":
            return try InMemoryTransport.reply(
                to: request, status: 401,
                headers: [
                    "WWW-Authenticate":
                        #"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#
                ], json: "{}")
        case "https://mcp.example.com/.well-known/oauth-protected-resource/mcp":
            return try InMemoryTransport.reply(
                to: request,
                json: #"{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"]}"#)
        case "https://auth.example.com/.well-known/oauth-authorization-server":
            return try InMemoryTransport.reply(
                to: request,
                json: #"{"issuer":"https://auth.example.com","token_endpoint":"https://auth.example.com/token","#
                    + #""code_challenge_methods_supported":["S256"]}"#)
        case "https://auth.example.com/token":
            return try InMemoryTransport.reply(
                to: request,
                json: #"{"access_token":"mcp-benchmark-access-token","token_type":"\#(tokenType)","expires_in":3600}"#)
        default:
            return try InMemoryTransport.reply(to: request, status: 404, json: "{}")
        }
    }
}

func mcpBenchmarks() {
    let endpoint = URL(string: "https://mcp.example.com/mcp")!
    let authorizers = Locked<(bearer: MCPAuthorizer, dpop: MCPAuthorizer)?>(nil)
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput], maxDuration: .seconds(3),
        maxIterations: 200_000,
        setup: {
            func signedIn(_ tokenType: String, proof: (any ProofOfPossession)?) async throws -> MCPAuthorizer {
                let signIn = ResourceSignIn(
                    resource: endpoint,
                    registration: ClientRegistrationPolicy(
                        preRegistered: ["https://auth.example.com": .clientSecretBasic(id: "agent", secret: "s3cret")]),
                    method: .clientCredentials, store: InMemoryTokenStore(),
                    configuration: .init(tokenTransport: mcpNetwork(tokenType: tokenType), proofOfPossession: proof))
                let authorizer = MCPAuthorizer(signIn: signIn)
                _ = try await authorizer.handleChallenge(
                    statusCode: 401, headers: [:], endpoint: endpoint, operationKey: nil, session: .shared)
                return authorizer
            }
            let bearer = try await signedIn("Bearer", proof: nil)
            let dpop = try await signedIn("DPoP", proof: DPoPProver())
            authorizers.withLock { $0 = (bearer, dpop) }
        })

    /// The request the transport builds (not measured): POST, with the snapshot's header set.
    func transportRequest(_ authorizer: MCPAuthorizer) -> URLRequest {
        var request = URLRequest(url: endpoint)
        request.httpMethod = "POST"
        request.setValue(authorizer.authorizationHeader(for: endpoint), forHTTPHeaderField: "Authorization")
        return request
    }

    /// One MCP request's authorization, the authorizer's part as the transport calls it:
    /// `prepareAuthorization`, `authorizationHeader`, then `modify`.
    @Sendable func authorize(_ authorizer: MCPAuthorizer, _ request: URLRequest) async throws -> URLRequest {
        try await authorizer.prepareAuthorization(for: endpoint, session: .shared)
        blackHole(authorizer.authorizationHeader(for: endpoint))
        return authorizer.modify(request)
    }

    Benchmark("MCP: authorizer per request, bearer token", configuration: configuration) { benchmark in
        guard let bearer = authorizers.withLock({ $0?.bearer }) else { return }
        let request = transportRequest(bearer)
        benchmark.startMeasurement()
        blackHole(try await authorize(bearer, request))
    }
    Benchmark("MCP: authorizer per request, DPoP-bound token", configuration: configuration) { benchmark in
        guard let dpop = authorizers.withLock({ $0?.dpop }) else { return }
        let request = transportRequest(dpop)
        benchmark.startMeasurement()
        blackHole(try await authorize(dpop, request))
    }
    // The synchronous part alone: the header from the snapshot.
    Benchmark("MCP: authorizationHeader alone", configuration: configuration) { benchmark in
        guard let bearer = authorizers.withLock({ $0?.bearer }) else { return }
        benchmark.startMeasurement()
        blackHole(bearer.authorizationHeader(for: endpoint))
    }
}
