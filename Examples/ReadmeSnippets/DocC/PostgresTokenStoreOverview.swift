#if PostgreSQL
import AuthenticatedRequests
import PostgresNIO
import PostgresTokenStore

/// A replica's authenticator, sharing one grant with every other replica through PostgreSQL.
func replicaAuthenticator(databasePassword: String, tokenKey: String, flow: any OAuthFlow) async throws
    -> OAuthAuthenticator
{
    // The store opens its own few connections; it needs no `run()`.
    let store = try PostgresTokenStore(
        connection: .init(
            host: "db.internal", username: "tokens", password: databasePassword,
            database: "app", tls: .disable),  // use .require(…) across a network
        key: TokenEncryptionKey(id: "2026-11", base64: tokenKey))
    try await store.migrate()
    return OAuthAuthenticator(flow: flow, store: store)
}
#endif
