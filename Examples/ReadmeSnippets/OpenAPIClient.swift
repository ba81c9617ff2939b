// The README's "Generated OpenAPI clients" snippet, compiled by every build with the OpenAPI trait.
#if OpenAPI
    import AuthenticatedRequests
    import OpenAPIAuthentication
    import OpenAPIRuntime

    /// README: "Generated OpenAPI clients". Pass both to the generated
    /// `Client(serverURL:transport:middlewares:)`.
    func openAPIClientParts(for authenticator: OAuthAuthenticator) -> (
        transport: any ClientTransport, middlewares: [any ClientMiddleware]
    ) {
        let middlewares: [any ClientMiddleware] = [
            AuthenticationMiddleware(authenticator: authenticator)  // token, refresh, one retry after a 401
        ]
        // Optional: the generated client sends through the authenticator's transport.
        let transport: any ClientTransport = HTTPTransportClient(authenticator.transport)
        return (transport, middlewares)
    }
#endif
