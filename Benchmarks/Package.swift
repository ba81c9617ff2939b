// swift-tools-version: 6.1
// The benchmarks: a package of their own, so users of the SDK never build them.
import Foundation
import PackageDescription

// A path dependency's identity is its folder's name, which depends on where the repository was
// cloned; read it instead of assuming it.
let root = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent()
let rootIdentity = root.lastPathComponent.lowercased()

let package = Package(
    name: "AuthenticatedRequestsBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: "..", traits: ["AsyncHTTPClient", "MCP", "PostgreSQL"]),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.25.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .target(
            name: "RequestFixtures",
            dependencies: [
                .product(name: "AuthenticatedRequests", package: rootIdentity),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Fixtures"
        ),
        // Benchmarks/profile: instructions per request under callgrind.
        .executableTarget(
            name: "RequestProfile",
            dependencies: [
                "RequestFixtures", .product(name: "AuthenticatedRequests", package: rootIdentity),
                .product(name: "DPoP", package: rootIdentity),
                .product(name: "AsyncHTTPClientTransport", package: rootIdentity),
            ],
            path: "Profiling"
        ),
        .executableTarget(
            name: "AuthBenchmarks",
            dependencies: [
                "RequestFixtures",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "AuthenticatedRequests", package: rootIdentity),
                .product(name: "AsyncHTTPClientTransport", package: rootIdentity),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresTokenStore", package: rootIdentity),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenIDConnect", package: rootIdentity),
                .product(name: "DPoP", package: rootIdentity),
                .product(name: "MCPAuthentication", package: rootIdentity),
                .product(name: "ResourceDiscovery", package: rootIdentity),
                .product(name: "OAuthFlows", package: rootIdentity),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/AuthBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
