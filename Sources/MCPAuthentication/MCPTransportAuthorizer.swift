#if MCP
    import Foundation
    import MCP

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The `HTTPClientAuthorizer` that ``MCPAuthorizer/makeTransport(streaming:sseInitializationTimeout:protocolVersion:)``
    /// gives the MCP SDK's transport, and nothing else: `MCPAuthorizer` does not conform itself,
    /// so it can only reach a transport whose `URLSession` loads through `OriginBoundURLProtocol`
    /// (no credential on a redirect outside the MCP endpoint). `package`: the project's tests
    /// build an unguarded transport with it to show what the guard prevents.
    ///
    /// `Sendable`: its one property is a `Sendable` class, set in `init`.
    package final class MCPTransportAuthorizer: HTTPClientAuthorizer {
        private let authorizer: MCPAuthorizer

        package init(_ authorizer: MCPAuthorizer) { self.authorizer = authorizer }

        package var maxAuthorizationAttempts: Int { authorizer.maxAuthorizationAttempts }

        package func validateEndpointSecurity(for endpoint: URL) throws {
            try authorizer.validateEndpointSecurity(for: endpoint)
        }

        package func authorizationHeader(for endpoint: URL) -> String? {
            authorizer.authorizationHeader(for: endpoint)
        }

        package func handleChallenge(
            statusCode: Int, headers: [String: String], endpoint: URL, operationKey: String?, session: URLSession
        ) async throws -> Bool {
            try await authorizer.handleChallenge(
                statusCode: statusCode, headers: headers, endpoint: endpoint, operationKey: operationKey,
                session: session)
        }

        package func prepareAuthorization(for endpoint: URL, session: URLSession) async throws {
            try await authorizer.prepareAuthorization(for: endpoint, session: session)
        }
    }
#endif
