#if PostgreSQL
    import AuthenticatedRequests
    import Foundation
    import PostgresTokenStore
    import Testing

    /// A table name PostgreSQL would read as something else is refused before any statement, typed
    /// `misconfigured` with what to change: before, `select` and `user` passed and failed at
    /// `migrate()`, and `pg_class` or another store's `_leases` table passed `migrate()` and failed
    /// every save.
    @Suite struct TableNameTests {
        @Test(arguments: [
            "select", "user", "table", "order", "pg_class", "pg_tokens", "authreq_tokens_leases",
            "authreq_tokens_schema", "Tokens", "1tokens", "tokens-x", "",
        ])
        func aTableNameThatCannotWorkIsRefused(_ name: String) {
            let error = #expect(throws: TokenStoreError.self) { try PostgresTokenStore.schemaSQL(tableName: name) }
            #expect(error?.code == .misconfigured, "\(name)")
            #expect(error?.description.contains("table name") == true, "says what to change")
        }

        @Test(arguments: ["authreq_tokens", "tokens", "users", "selected", "my_pg_tokens", "leases_of_x"])
        func plainNamesAreAccepted(_ name: String) throws {
            #expect(try PostgresTokenStore.schemaSQL(tableName: name).contains("\(name)_leases"))
        }
    }
#endif
