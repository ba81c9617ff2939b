#if MCP
    import AuthenticatedRequests
    import Foundation
    import MCP

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    extension MCPAuthorizer {
        /// The MCP Swift SDK's transport to the MCP server this authorizer signs in to, wired in
        /// one call: the authorizer answers its challenges and gives its `Authorization` header,
        /// a DPoP proof is added to every request (without it, DPoP-bound tokens could not be
        /// sent), and its `URLSession` loads through a guard, so no redirect carries a credential
        /// outside the MCP endpoint (another origin, or another path on the same one) and no
        /// cookie or cache is kept. It is the only way to give the authorizer to a transport.
        ///
        /// ```swift
        /// let authorizer = MCPAuthorizer(signIn: signIn)
        /// let client = Client(name: "My Agent", version: "1.0")
        /// _ = try await client.connect(transport: authorizer.makeTransport())
        /// ```
        ///
        /// - Parameters:
        ///   - streaming: whether the transport opens the server's event stream (the SDK's
        ///     default, `true`; it streams only where `URLSession` streams bytes, on Apple
        ///     platforms).
        ///   - sseInitializationTimeout: how long the transport waits for a session id before it
        ///     opens the event stream, in seconds.
        ///   - protocolVersion: the MCP protocol version the transport announces.
        public func makeTransport(
            streaming: Bool = true,
            sseInitializationTimeout: TimeInterval = 10,
            protocolVersion: String = Version.latest
        ) -> HTTPClientTransport {
            HTTPClientTransport(
                endpoint: signIn.resource,
                configuration: Self.sessionConfiguration(),
                streaming: streaming,
                sseInitializationTimeout: sseInitializationTimeout,
                protocolVersion: protocolVersion,
                authorizer: MCPTransportAuthorizer(self),
                requestModifier: modify)
        }

        /// The configuration for the MCP SDK's `URLSession`: no cookies, no cache
        /// (`URLSessionTransport.defaultConfiguration()`), and a loader that refuses to follow a
        /// redirect that would carry the request's `Authorization` or `DPoP` header outside the
        /// endpoint's resource (the request fails with `AuthenticationError` `foreignResource`;
        /// nothing is sent there).
        static func sessionConfiguration() -> URLSessionConfiguration {
            let configuration = URLSessionTransport.defaultConfiguration()
            configuration.protocolClasses = [OriginBoundURLProtocol.self]
            return configuration
        }
    }
#endif
