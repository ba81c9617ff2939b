// The README's "Many machines, one grant" snippet, compiled by every build with the PostgreSQL trait.
#if PostgreSQL
    import AuthenticatedRequests
    import PostgresNIO
    import PostgresTokenStore

    /// README: "Many machines, one grant".
    func fleetAuthenticator(database: PostgresConnection.Configuration, tokenKeyBase64: String, flow: any OAuthFlow)
        async throws -> OAuthAuthenticator
    {
        // Every replica: the same database, table and key.
        let store = try PostgresTokenStore(
            connection: database,  // host, user, password, database, TLS: the store opens its own connections
            key: TokenEncryptionKey(id: "2026-11", base64: tokenKeyBase64),  // 32 bytes from your secret manager
            configuration: .init(whenUnavailable: .failRefresh))  // the default; see below
        try await store.migrate()  // explicit, versioned, idempotent; or apply PostgresTokenStore.schemaSQL()
        let authenticator = OAuthAuthenticator(flow: flow, store: store)
        return authenticator
    }
#endif
