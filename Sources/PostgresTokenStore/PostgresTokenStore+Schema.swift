#if PostgreSQL
    import AuthenticatedRequests
    import Foundation
    import Logging
    import PostgresNIO

    // The table, created by explicit, versioned, idempotent migrations.
    extension PostgresTokenStore {
        /// The schema version this release of the store reads and writes.
        public static let schemaVersion = Schema.migrations.count

        /// The SQL that ``migrate()`` runs, for teams that manage their schema themselves: apply
        /// it once per version (it is idempotent).
        ///
        /// ```sql
        /// CREATE TABLE IF NOT EXISTS authreq_tokens (
        ///     store_key  text PRIMARY KEY,          -- client, token endpoint and account; not secret
        ///     key_id     text NOT NULL,             -- which TokenEncryptionKey sealed the entry
        ///     sealed     bytea NOT NULL,            -- AES-256-GCM: nonce, ciphertext, tag
        ///     updated_at timestamptz NOT NULL DEFAULT now()
        /// );
        /// CREATE TABLE IF NOT EXISTS authreq_tokens_leases (
        ///     store_key  text PRIMARY KEY,          -- the entry being refreshed
        ///     holder     text NOT NULL,             -- a random name of the refreshing replica's claim
        ///     expires_at timestamptz NOT NULL       -- on the database's clock; renewed while it refreshes
        /// );
        /// ```
        public static func schemaSQL(tableName: String = "authreq_tokens") throws -> String {
            try Schema.validate(tableName: tableName)
            return Schema.migrations.map { $0(tableName) }.joined(separator: "\n")
                + "\n" + Schema.versionTableSQL(tableName)
                + "\nINSERT INTO \(tableName)_schema (version) SELECT \(schemaVersion) "
                + "WHERE NOT EXISTS (SELECT 1 FROM \(tableName)_schema WHERE version >= \(schemaVersion));"
        }

        /// Creates or upgrades the table to ``schemaVersion``, in one transaction that concurrent
        /// callers (replicas starting together) take turns at; running it again changes nothing.
        ///
        /// - Throws: `TokenStoreError` `.ioFailed` with the server's message (e.g. no permission
        ///   to create tables), or `.unavailable`.
        public func migrate() async throws {
            let table = self.table
            let logger = self.logger
            let lockID = Self.lockID(table: table, key: "#schema")
            try await database("#schema", .migrate, "migrate the schema", waitsForOthers: true) { connection in
                try await connection.withTransaction(logger: logger) { connection in
                    try await connection.query("SELECT pg_advisory_xact_lock(\(lockID))", logger: logger).drain()
                    try await connection.query(PostgresQuery(unsafeSQL: Schema.versionTableSQL(table)), logger: logger)
                        .drain()
                    var current = 0
                    let rows = try await connection.query(
                        "SELECT coalesce(max(version), 0) FROM \(unescaped: table)_schema", logger: logger)
                    for try await version in rows.decode(Int.self) { current = version }
                    guard current <= Schema.migrations.count else {
                        throw DatabaseError(
                            sqlState: "",
                            message: "The table is at schema version \(current); this release knows "
                                + "\(Schema.migrations.count). Upgrade the package.")
                    }
                    for version in Schema.migrations.indices.map({ $0 + 1 }) where version > current {
                        try await connection.query(
                            PostgresQuery(unsafeSQL: Schema.migrations[version - 1](table)), logger: logger
                        ).drain()
                        try await connection.query(
                            "INSERT INTO \(unescaped: table)_schema (version) VALUES (\(version))", logger: logger
                        ).drain()
                    }
                }
            }
        }

        /// Re-seals every entry that an older key sealed with ``key``, for a key rotation; returns
        /// how many it re-sealed. Entries no configured key opens are left as they are.
        @discardableResult
        public func resealEntries() async throws -> Int {
            let currentID = key.id
            let (table, logger) = (self.table, self.logger)
            let stale: [(String, String, Data)] = try await database("#reseal", .reseal, "list entries to reseal") {
                connection in
                let rows = try await connection.query(
                    "SELECT store_key, key_id, sealed FROM \(unescaped: table) WHERE key_id <> \(currentID)",
                    logger: logger)
                var found: [(String, String, Data)] = []
                for try await row in rows.decode((String, String, Data).self) { found.append(row) }
                return found
            }
            var resealed = 0
            for (storeKey, keyID, sealed) in stale {
                guard let plaintext = try? open(sealed, keyID: keyID, forKey: storeKey) else { continue }
                let fresh = try seal(plaintext, forKey: storeKey)
                // Only over the same sealed value: a refresh that wrote meanwhile wins.
                let updated = try await database(storeKey, .reseal, "reseal an entry") { connection in
                    try await connection.withTransaction(logger: logger) { connection in
                        let rows = try await connection.query(
                            """
                            UPDATE \(unescaped: table) SET key_id = \(currentID), sealed = \(fresh), updated_at = now()
                            WHERE store_key = \(storeKey) AND key_id = \(keyID) AND sealed = \(sealed)
                            RETURNING 1
                            """,
                            logger: logger)
                        var count = 0
                        for try await _ in rows.decode(Int.self) { count += 1 }
                        return count
                    }
                }
                resealed += updated
            }
            return resealed
        }
    }

    /// The migrations, one per schema version, and the table name's rules.
    enum Schema {
        static let migrations: [@Sendable (String) -> String] = [
            { table in
                """
                CREATE TABLE IF NOT EXISTS \(table) (
                    store_key text PRIMARY KEY,
                    key_id text NOT NULL,
                    sealed bytea NOT NULL,
                    updated_at timestamptz NOT NULL DEFAULT now()
                );
                """
            },
            { table in
                """
                CREATE TABLE IF NOT EXISTS \(table)_leases (
                    store_key text PRIMARY KEY,
                    holder text NOT NULL,
                    expires_at timestamptz NOT NULL
                );
                """
            },
        ]

        static func versionTableSQL(_ table: String) -> String {
            "CREATE TABLE IF NOT EXISTS \(table)_schema (version integer NOT NULL);"
        }

        /// PostgreSQL's reserved key words (its documentation's appendix "SQL Key Words", reserved
        /// and reserved-but-function-or-type): unquoted, such a table name is a syntax error.
        static let reservedWords: Set<String> = [
            "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization",
            "binary", "both", "case", "cast", "check", "collate", "collation", "column", "concurrently",
            "constraint", "create", "cross", "current_catalog", "current_date", "current_role", "current_schema",
            "current_time", "current_timestamp", "current_user", "default", "deferrable", "desc", "distinct", "do",
            "else", "end", "except", "false", "fetch", "for", "foreign", "freeze", "from", "full", "grant", "group",
            "having", "ilike", "in", "initially", "inner", "intersect", "into", "is", "isnull", "join", "lateral",
            "leading", "left", "like", "limit", "localtime", "localtimestamp", "natural", "not", "notnull", "null",
            "offset", "on", "only", "or", "order", "outer", "overlaps", "placing", "primary", "references",
            "returning", "right", "select", "session_user", "similar", "some", "symmetric", "system_user", "table",
            "tablesample", "then", "to", "trailing", "true", "union", "unique", "user", "using", "variadic",
            "verbose", "when", "where", "window", "with",
        ]

        /// Table names go into SQL text, so only plain identifiers are accepted, and none that
        /// PostgreSQL reads as something else: a reserved word (`select`, `user`), a name of the
        /// system catalogs' `pg_` prefix (`pg_class` resolves to the catalog), or one ending in a
        /// suffix of the store's own companion tables (`x_leases` is the lease table of a store on
        /// `x`, `x_schema` its version table).
        static func validate(tableName: String) throws {
            let bytes = Array(tableName.utf8)
            let isPlain =
                (1...55).contains(bytes.count)
                && bytes.allSatisfy { $0 == UInt8(ascii: "_") || (48...57).contains($0) || (97...122).contains($0) }
                && !(48...57).contains(bytes[0])
            let problem: String? =
                if !isPlain {
                    "A table name must be 1 to 55 lowercase letters, digits or _, not starting with a digit."
                } else if reservedWords.contains(tableName) {
                    "'\(tableName)' is a reserved word of PostgreSQL; choose another table name, e.g. authreq_tokens."
                } else if tableName.hasPrefix("pg_") {
                    "'\(tableName)' starts with pg_, the prefix of PostgreSQL's system catalogs; choose another table name."
                } else if tableName.hasSuffix("_leases") || tableName.hasSuffix("_schema") {
                    "'\(tableName)' ends like the store's own lease or version table (_leases, _schema) of another "
                        + "store's table; choose another table name."
                } else {
                    nil
                }
            guard let problem else { return }
            throw TokenStoreError(
                code: .misconfigured, key: "#schema", path: tableName,
                underlyingError: DatabaseError(sqlState: "", message: problem))
        }
    }
#endif
