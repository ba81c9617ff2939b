#if PostgreSQL
import AuthenticatedRequests
import PostgresNIO
import PostgresTokenStore

/// A replica's authenticator, sharing one grant with every other replica through PostgreSQL.
func replicaAuthenticator(postgres: PostgresClient, tokenKey: String, flow: any OAuthFlow) async throws
    -> OAuthAuthenticator
{
    // `postgres` runs: `await postgres.run()` in a task of its own.
    let store = try PostgresTokenStore(
        client: postgres,
        key: TokenEncryptionKey(id: "2026-11", base64: tokenKey))
    try await store.migrate()
    return OAuthAuthenticator(flow: flow, store: store)
}
#endif
