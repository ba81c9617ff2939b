#if PostgreSQL
import AuthenticatedRequests
import PostgresNIO
import PostgresTokenStore

/// The store's own connection pool for a fleet larger than the database's connection budget,
/// without a pooler: a waiting replica keeps no connection open.
func fleetStore(database: PostgresClient.Configuration, tokenKey: String) throws
    -> (PostgresClient, PostgresTokenStore)
{
    var configuration = database
    configuration.options.maximumConnections = 2  // the holder's statements and its lease renewal
    configuration.options.connectionIdleTimeout = .milliseconds(25)  // closed soon after each statement
    let client = PostgresClient(configuration: configuration)  // run it: `await client.run()`
    let store = try PostgresTokenStore(
        client: client,
        key: TokenEncryptionKey(id: "2026-11", base64: tokenKey))
    return (client, store)
}
#endif
