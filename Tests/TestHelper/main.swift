// A helper process for tests that need real separate processes: a write under a file-size limit
// (a full disk), and several processes that share one token store, some of which die on purpose.
//
// Usage:
//   authreq-test-helper store-write DIRECTORY KEY BYTES FILE_SIZE_LIMIT
//   authreq-test-helper requests STORE TOKEN_ENDPOINT CLIENT_ID API_URL COUNT [CLIENT_SECRET]
//       Restores the session stored for CLIENT_ID (public, or client_secret_post with
//       CLIENT_SECRET) at TOKEN_ENDPOINT from STORE, and sends COUNT concurrent GETs to API_URL;
//       prints one JSON line: {"successes": N, "errors": {"<description>": N}}.
//       STORE is a FileTokenStore's folder, or a postgres:// URL for a PostgresTokenStore (table
//       AUTHREQ_HELPER_TABLE, key AUTHREQ_HELPER_TOKEN_KEY in Base64; needs the PostgreSQL trait).
//       With AUTHREQ_HELPER_CRASH_AT set, the process kills itself with SIGKILL during its
//       refresh: before-request, after-send, after-response or during-write.
//       A postgres:// STORE can stand for several replicas in this one process:
//       AUTHREQ_HELPER_REPLICAS (1 unless set) independent replicas, each with a connection pool
//       (AUTHREQ_HELPER_PG_MAX_CONNECTIONS, AUTHREQ_HELPER_PG_IDLE_MS), a store (its operation
//       and response timeouts AUTHREQ_HELPER_PG_TIMEOUT seconds if set) and an
//       authenticator of its own, all starting at AUTHREQ_HELPER_START_AT (seconds since 1970)
//       if set; the JSON line then also counts "replicasServed" (every request succeeded).
//   authreq-test-helper jwt-bearer-requests STORE TOKEN_ENDPOINT CLIENT_ID ASSERTION_FILE API_URL COUNT
//       Uses the JWT bearer grant (RFC 7523) of the public CLIENT_ID with the workload token in
//       ASSERTION_FILE (read for every grant), its token kept in STORE (a FileTokenStore's folder
//       or a postgres:// URL, as above), and sends COUNT concurrent GETs to API_URL; prints the
//       same JSON line.
//   authreq-test-helper grant-requests STORE CLIENT_ID COUNT RESOURCE...
//       Discovers the resources (one authorization server), uses the public CLIENT_ID registered
//       for it, and sends COUNT concurrent GETs to each resource with the tokens of the grant
//       stored in the FileTokenStore folder STORE; never signs in. Prints the same JSON line.
//   authreq-test-helper ciba-requests STORE ISSUER CLIENT_ID CLIENT_SECRET LOGIN_HINT COUNT
//       The OpenID provider at ISSUER asks LOGIN_HINT through CIBA (poll mode) when STORE (a
//       FileTokenStore's folder) has no session of CLIENT_ID (client_secret_basic), and COUNT
//       concurrent GETs go to its UserInfo endpoint, at AUTHREQ_HELPER_START_AT if set; prints the
//       same JSON line.
import AuthenticatedRequests
import Foundation
import OAuthFlows
import OpenIDConnect
import ResourceDiscovery

#if PostgreSQL
    import Metrics
    import MetricsTestKit
    import PostgresNIO
    import PostgresTokenStore
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

/// Where the process dies, if anywhere.
let crashPoint = ProcessInfo.processInfo.environment["AUTHREQ_HELPER_CRASH_AT"]

func die() -> Never {
    kill(getpid(), SIGKILL)
    fail("SIGKILL did not kill")
}

/// The token endpoint transport, which dies at the crash point.
struct CrashingTransport: HTTPTransport {
    let base = URLSessionTransport()

    func send(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        try await send(request, options: .default)
    }

    func send(_ request: URLRequest, options: HTTPTransportOptions) async throws -> (Data, ResponseHead) {
        let isRefresh = String(decoding: request.httpBody ?? Data(), as: UTF8.self).contains("grant_type=refresh_token")
        guard isRefresh else { return try await base.send(request, options: options) }
        switch crashPoint {
        case "before-request":
            die()
        case "after-send":
            Task { _ = try? await base.send(request, options: options) }
            try await Task.sleep(nanoseconds: 300_000_000)  // the server has it by now
            die()
        case "after-response":
            _ = try await base.send(request, options: options)
            die()
        default:
            return try await base.send(request, options: options)
        }
    }
}

/// The store, which dies in the middle of writing the refreshed credential: a file store after
/// writing half a file, a database store before its (atomic) statement.
struct CrashingStore: TokenStore {
    let base: any TokenStore
    let directory: URL?

    func load(forKey key: String) async throws -> Data? { try await base.load(forKey: key) }
    func removeValue(forKey key: String) async throws { try await base.removeValue(forKey: key) }
    var coordinatesProcesses: Bool { base.coordinatesProcesses }

    func save(_ data: Data, forKey key: String) async throws {
        if crashPoint == "during-write", !key.hasSuffix("#refresh-in-flight") {
            if let directory {
                // Half a file where the new entry was being written, then death.
                let partial = directory.appendingPathComponent(".partial-\(getpid()).tmp")
                _ = FileManager.default.createFile(atPath: partial.path, contents: data.prefix(data.count / 2))
            }
            die()
        }
        try await base.save(data, forKey: key)
    }

    func withRefreshLock<Value: Sendable>(
        forKey key: String,
        timeout: TimeInterval,
        _ body: @Sendable () async throws -> Value
    ) async throws -> Value {
        try await base.withRefreshLock(forKey: key, timeout: timeout, body)
    }

    func withRefreshLock<Value: Sendable>(
        forKey key: String,
        timeout: TimeInterval,
        adoptingAfterWait adopt: @Sendable () async throws -> Value?,
        _ body: @Sendable () async throws -> Value
    ) async throws -> Value {
        try await base.withRefreshLock(forKey: key, timeout: timeout, adoptingAfterWait: adopt, body)
    }
}

/// The stores a `STORE` argument names, one per replica; database stores run their connection
/// pools meanwhile.
func withStores<Value>(_ location: String, _ body: ([CrashingStore]) async throws -> Value) async throws -> Value {
    let environment = ProcessInfo.processInfo.environment
    if location.hasPrefix("postgres://") {
        #if PostgreSQL
            guard let url = URL(string: location),
                let table = environment["AUTHREQ_HELPER_TABLE"],
                let key = environment["AUTHREQ_HELPER_TOKEN_KEY"]
            else { fail("a postgres:// store needs AUTHREQ_HELPER_TABLE and AUTHREQ_HELPER_TOKEN_KEY") }
            let replicas = environment["AUTHREQ_HELPER_REPLICAS"].flatMap { Int($0) } ?? 1
            // The SDK's defaults unless a test says otherwise.
            var storeConfiguration = PostgresTokenStore.Configuration(tableName: table)
            if let maximum = environment["AUTHREQ_HELPER_PG_MAX_CONNECTIONS"].flatMap({ Int($0) }) {
                storeConfiguration.maximumConnections = maximum
            }
            if let idle = environment["AUTHREQ_HELPER_PG_IDLE_MS"].flatMap({ Double($0) }) {
                storeConfiguration.connectionIdleTimeout = idle / 1000
            }
            if let seconds = environment["AUTHREQ_HELPER_PG_TIMEOUT"].flatMap(TimeInterval.init) {
                storeConfiguration.operationTimeout = seconds
                storeConfiguration.responseTimeout = seconds
            }
            let connection = PostgresConnection.Configuration(
                host: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: url.user ?? "authreq",
                password: url.password, database: String(url.path.dropFirst()), tls: .disable)
            let stores = try (0..<replicas).map { _ in
                CrashingStore(
                    base: try PostgresTokenStore(
                        connection: connection, key: TokenEncryptionKey(id: "test", base64: key),
                        configuration: storeConfiguration),
                    directory: nil)
            }
            return try await body(stores)
        #else
            fail("this helper was built without the PostgreSQL trait")
        #endif
    }
    let directory = URL(fileURLWithPath: location)
    return try await body([CrashingStore(base: FileTokenStore(directory: directory), directory: directory)])
}

/// Waits until `AUTHREQ_HELPER_START_AT`, when set, so that replicas in many processes start together.
func waitForTheStart() async throws {
    guard let start = ProcessInfo.processInfo.environment["AUTHREQ_HELPER_START_AT"].flatMap(Double.init) else {
        return
    }
    let wait = start - Date().timeIntervalSince1970
    if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
}

struct Get: AuthenticatedResource {
    typealias Output = Data
    let authenticator: any RequestAuthenticator
    let url: URL
    func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: url) }
}

/// Sends every GET at once; `nil` for a success, else what failed.
func concurrentGets(_ gets: [(OAuthAuthenticator, URL)]) async -> [String?] {
    await withTaskGroup(of: String?.self) { group in
        for (authenticator, url) in gets {
            group.addTask {
                do {
                    _ = try await Get(authenticator: authenticator, url: url).request()
                    return nil
                } catch let error as AuthenticationError {
                    // The store's failure under a refresh failure says which (unavailable, a lock
                    // timeout); nothing secret is in either.
                    if let store = error.underlyingError as? TokenStoreError {
                        return "\(error.code): \(store.code) (\(store.underlyingError.map { "\($0)" } ?? ""))"
                    }
                    return "\(error.code)"
                } catch let error as ResourceError {
                    return "status \(error.statusCode ?? 0)"
                } catch {
                    return "\(type(of: error))"
                }
            }
        }
        var outcomes: [String?] = []
        for await outcome in group { outcomes.append(outcome) }
        return outcomes
    }
}

/// Prints `{"successes": N, "errors": {"<description>": N}, "replicasServed": R}`, where the
/// outcomes are grouped by replica (one group unless given).
/// With `lastServedAt`, also when the last replica's requests ended (seconds since 1970).
func printSummary(
    of outcomes: [String?], byReplica groups: [[String?]]? = nil, lastServedAt: TimeInterval? = nil
) throws {
    var errors: [String: Int] = [:]
    for case let error? in outcomes { errors[error, default: 0] += 1 }
    let served = (groups ?? [outcomes]).filter { $0.allSatisfy { $0 == nil } }.count
    var summary: [String: Any] = [
        "successes": outcomes.filter { $0 == nil }.count, "errors": errors, "replicasServed": served,
    ]
    if let lastServedAt { summary["lastServedAt"] = lastServedAt }
    #if PostgreSQL
        if let metrics = storeMetrics {
            var retries: [String: Int64] = [:]
            for counter in metrics.counters(label: "authreq_store_retries_total") {
                let cause = counter.dimensions.first { $0.0 == "cause" }?.1 ?? "?"
                retries[cause, default: 0] += counter.totalValue
            }
            summary["retries"] = retries
        }
    #endif
    let json = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
    print(String(decoding: json, as: UTF8.self))
}

#if PostgreSQL
    /// The stores' metrics, kept in memory when `AUTHREQ_HELPER_METRICS` is set, so that the JSON
    /// line can count retries by cause.
    let storeMetrics: TestMetrics? = {
        guard ProcessInfo.processInfo.environment["AUTHREQ_HELPER_METRICS"] != nil else { return nil }
        let metrics = TestMetrics()
        MetricsSystem.bootstrap(metrics)
        return metrics
    }()
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "store-write":
    let values = Array(arguments.dropFirst())
    guard values.count == 4, let bytes = Int(values[2]), let limit = rlim_t(values[3]) else {
        fail("usage: store-write DIRECTORY KEY BYTES FILE_SIZE_LIMIT")
    }
    // A write past RLIMIT_FSIZE fails with EFBIG, as a full disk fails with ENOSPC; the signal
    // that would kill the process is ignored so that the store sees the error.
    signal(SIGXFSZ, SIG_IGN)
    var limits = rlimit(rlim_cur: limit, rlim_max: limit)
    guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limits) == 0 else { fail("setrlimit failed") }
    let store = FileTokenStore(directory: URL(fileURLWithPath: values[0]))
    let payload =
        Data(#"{"access_token":""#.utf8) + Data(repeating: UInt8(ascii: "x"), count: bytes)
        + Data(#""}"#.utf8)
    do {
        try await store.save(payload, forKey: values[1])
        print("saved")
    } catch let error as TokenStoreError {
        print("failed: \(error.code)")
    }
case "requests":
    let values = Array(arguments.dropFirst())
    guard values.count == 5 || values.count == 6, let tokenEndpoint = URL(string: values[1]),
        let api = URL(string: values[3]), let count = Int(values[4])
    else { fail("usage: requests STORE TOKEN_ENDPOINT CLIENT_ID API_URL COUNT [CLIENT_SECRET]") }
    let client: ClientAuthentication =
        values.count == 6 ? .clientSecretPost(id: values[2], secret: values[5]) : .none(id: values[2])
    let groups = try await withStores(values[0]) { stores in
        try await waitForTheStart()
        return try await withThrowingTaskGroup(of: [String?].self) { replicas in
            for store in stores {
                replicas.addTask {
                    let restored: OAuthAuthenticator?
                    do {
                        restored = try await OAuthAuthenticator.restore(
                            tokenEndpoint: tokenEndpoint,
                            client: client,
                            store: store,
                            configuration: .init(tokenTransport: CrashingTransport(), storeLockTimeout: 30)
                        )
                    } catch {
                        return Array(repeating: "restore failed: \(error)", count: count)
                    }
                    guard let authenticator = restored else { return Array(repeating: "no session", count: count) }
                    return await concurrentGets(Array(repeating: (authenticator, api), count: count))
                }
            }
            var all: [[String?]] = []
            for try await outcomes in replicas { all.append(outcomes) }
            return all
        }
    }
    try printSummary(of: groups.flatMap { $0 }, byReplica: groups, lastServedAt: Date().timeIntervalSince1970)
case "jwt-bearer-requests":
    let values = Array(arguments.dropFirst())
    guard values.count == 6, let tokenEndpoint = URL(string: values[1]), let api = URL(string: values[4]),
        let count = Int(values[5])
    else { fail("usage: jwt-bearer-requests STORE TOKEN_ENDPOINT CLIENT_ID ASSERTION_FILE API_URL COUNT") }
    let flow = JWTBearerFlow(
        tokenEndpoint: tokenEndpoint, client: .none(id: values[2]),
        assertion: .file(URL(fileURLWithPath: values[3])))
    let outcomes = try await withStores(values[0]) { stores in
        let authenticator = OAuthAuthenticator(
            flow: flow, store: stores[0],
            configuration: .init(tokenTransport: CrashingTransport(), allowsInsecureHTTP: true, storeLockTimeout: 30))
        return await concurrentGets(Array(repeating: (authenticator, api), count: count))
    }
    try printSummary(of: outcomes)
case "grant-requests":
    let values = Array(arguments.dropFirst())
    guard values.count >= 4, let count = Int(values[2]) else {
        fail("usage: grant-requests STORE CLIENT_ID COUNT RESOURCE...")
    }
    let resources = values.dropFirst(3).compactMap(URL.init(string:))
    let store = FileTokenStore(directory: URL(fileURLWithPath: values[0]))
    let configuration = OAuthAuthenticator.Configuration(allowsInsecureHTTP: true, storeLockTimeout: 30)
    // The issuer is the resources' origin (the test server is both).
    guard let origin = resources.first.flatMap({ URL(string: "/", relativeTo: $0)?.absoluteURL }) else {
        fail("no resource")
    }
    let issuer = String(origin.absoluteString.dropLast())
    let grant = try await ResourceGrant.discover(
        resources: Array(resources),
        registration: ClientRegistrationPolicy(preRegistered: [issuer: .none(id: values[1])]),
        method: .nonInteractive, store: store, configuration: configuration)
    var gets: [(OAuthAuthenticator, URL)] = []
    for resource in resources {
        let authenticator = try grant.authenticator(for: resource)
        gets += Array(repeating: (authenticator, resource), count: count)
    }
    try printSummary(of: await concurrentGets(gets))
case "ciba-requests":
    let values = Array(arguments.dropFirst())
    guard values.count == 6, let issuer = URL(string: values[1]), let count = Int(values[5]) else {
        fail("usage: ciba-requests STORE ISSUER CLIENT_ID CLIENT_SECRET LOGIN_HINT COUNT")
    }
    let provider = try await OpenIDProvider.discover(issuer: issuer)
    let oidc = OpenIDClient(provider: provider, client: .clientSecretBasic(id: values[2], secret: values[3]))
    let flow = try oidc.backchannelSessionFlow(
        request: BackchannelAuthenticationRequest(
            hint: .loginHint(values[4]), scope: "openid email offline_access", bindingMessage: "helper"))
    let authenticator = OAuthAuthenticator(
        flow: flow, store: FileTokenStore(directory: URL(fileURLWithPath: values[0])),
        configuration: .init(storeLockTimeout: 30))
    guard let userInfo = provider.userInfoEndpoint else { fail("the provider has no userinfo_endpoint") }
    try await waitForTheStart()
    try printSummary(of: await concurrentGets(Array(repeating: (authenticator, userInfo), count: count)))
default:
    fail("unknown command")
}
