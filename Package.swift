// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "AuthenticatedRequests",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "AuthenticatedRequests", targets: ["AuthenticatedRequests"]),
        .library(name: "OAuthFlows", targets: ["OAuthFlows"]),
        .library(name: "CodeFlowOAuth", targets: ["CodeFlowOAuth"]),
        .library(name: "OpenIDConnect", targets: ["OpenIDConnect"]),
        .library(name: "DPoP", targets: ["DPoP"]),
        .library(name: "ResourceDiscovery", targets: ["ResourceDiscovery"]),
        .library(name: "AsyncHTTPClientTransport", targets: ["AsyncHTTPClientTransport"]),
        .library(name: "AuthenticatedRequestsLogging", targets: ["AuthenticatedRequestsLogging"]),
        .library(name: "AuthenticatedRequestsMetrics", targets: ["AuthenticatedRequestsMetrics"]),
        .library(name: "OpenAPIAuthentication", targets: ["OpenAPIAuthentication"]),
        .library(name: "PostgresTokenStore", targets: ["PostgresTokenStore"]),
        .library(name: "MCPAuthentication", targets: ["MCPAuthentication"]),
        .executable(name: "authreq", targets: ["authreq"]),
    ],
    traits: [
        .trait(
            name: "AsyncHTTPClient",
            description: "Builds AsyncHTTPClientTransport on swift-server/async-http-client (server-side Swift)."
        ),
        .trait(
            name: "Logging",
            description: "Builds AuthenticatedRequestsLogging, which routes the authenticator's events into swift-log."
        ),
        .trait(
            name: "Metrics",
            description:
                "Builds AuthenticatedRequestsMetrics: the authenticator's events as swift-metrics counters, and "
                + "a transport that traces requests with swift-distributed-tracing."
        ),
        .trait(
            name: "PostgreSQL",
            description: "Builds PostgresTokenStore, a token store on vapor/postgres-nio shared by many machines."
        ),
        .trait(
            name: "MCP",
            description: "Builds MCPAuthentication, an authorizer for the MCP Swift SDK's HTTP client transport."
        ),
        .trait(
            name: "OpenAPI",
            description: "Builds OpenAPIAuthentication, a swift-openapi-runtime ClientMiddleware on the authenticator."
        ),
    ],
    dependencies: [
        // jwt-kit 5.8 needs swift-crypto 4; 3.x still resolves for packages that pin it.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        // JOSE (ID tokens, JWKS, client assertions) for OpenIDConnect.
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // Fetched and built only with the AsyncHTTPClient trait enabled.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // AsyncHTTPClient's TLS (already in its graph): the transport's client identity for mutual TLS.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.36.0"),
        // Fetched and built only with the Logging trait enabled.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Fetched and built only with the OpenAPI trait enabled.
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        // Fetched and built only with the PostgreSQL trait enabled.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.25.0"),
        // The store's and the authenticator's metrics and spans: API packages, no-ops until the
        // application bootstraps a backend (swift-prometheus, swift-otel).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.1.0"),
        // Fetched and built only with the MCP trait enabled.
        .package(url: "https://github.com/modelcontextprotocol/swift-sdk", exact: "0.12.1"),
        // The `authreq` command-line tool's arguments; no library product uses it.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // `swift package generate-documentation`; adds no code to any product.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        .target(name: "AuthenticatedRequests"),
        .target(
            name: "OAuthFlows",
            dependencies: [
                "AuthenticatedRequests",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "CodeFlowOAuth",
            dependencies: [
                "OAuthFlows",
                // The loopback redirect receiver only: apps on iOS, tvOS, watchOS and visionOS
                // sign in through the web authentication session or a custom scheme and build no
                // SwiftNIO.
                .product(name: "NIOCore", package: "swift-nio", condition: .when(platforms: [.macOS, .linux])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(platforms: [.macOS, .linux])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(platforms: [.macOS, .linux])),
            ]
        ),
        .target(
            name: "OpenIDConnect",
            dependencies: [
                "CodeFlowOAuth",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "DPoP",
            dependencies: [
                "AuthenticatedRequests",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Sign in from a resource's URL: RFC 9728 metadata and the authorization server behind it.
        .target(name: "ResourceDiscovery", dependencies: ["OAuthFlows", "CodeFlowOAuth"]),
        .target(
            name: "AsyncHTTPClientTransport",
            dependencies: [
                "AuthenticatedRequests",
                .product(
                    name: "AsyncHTTPClient",
                    package: "async-http-client",
                    condition: .when(traits: ["AsyncHTTPClient"])
                ),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: ["AsyncHTTPClient"])),
            ]
        ),
        .target(
            name: "AuthenticatedRequestsLogging",
            dependencies: [
                "AuthenticatedRequests",
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Logging"])),
            ]
        ),
        .target(
            name: "AuthenticatedRequestsMetrics",
            dependencies: [
                "AuthenticatedRequests",
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["Metrics"])),
            ]
        ),
        .target(
            name: "OpenAPIAuthentication",
            dependencies: [
                "AuthenticatedRequests",
                .product(
                    name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: .when(traits: ["OpenAPI"])),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["OpenAPI"])),
            ]
        ),
        .target(
            name: "PostgresTokenStore",
            dependencies: [
                "AuthenticatedRequests",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["PostgreSQL"])),
                .product(
                    name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["PostgreSQL"])),
            ]
        ),
        // The `authreq` command-line tool: its commands live in AuthreqCLI, so tests and the fuzz
        // targets can reach them; `authreq` only runs them.
        .target(
            name: "MCPAuthentication",
            dependencies: [
                "ResourceDiscovery",
                .product(name: "MCP", package: "swift-sdk", condition: .when(traits: ["MCP"])),
            ]
        ),
        .target(
            name: "AuthreqCLI",
            dependencies: [
                "CodeFlowOAuth", "DPoP", "ResourceDiscovery", "AsyncHTTPClientTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["AsyncHTTPClient"])),
            ]
        ),
        .executableTarget(name: "authreq", dependencies: ["AuthreqCLI"]),
        .executableTarget(
            name: "mcp-client-example",
            dependencies: [
                "MCPAuthentication", "CodeFlowOAuth", "ResourceDiscovery", "OAuthFlows", "OpenIDConnect",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "MCP", package: "swift-sdk", condition: .when(traits: ["MCP"])),
            ],
            path: "Sources/mcp-client-example"
        ),
        .executableTarget(
            name: "authreq-example",
            dependencies: ["CodeFlowOAuth"],
            path: "Sources/authreq-example"
        ),
        // The README's and the DocC articles' snippets, compiled with everything else so that they
        // stay true (Scripts/check-readme: every block is byte-identical to one of these files).
        .target(
            name: "ReadmeSnippets",
            dependencies: [
                "CodeFlowOAuth", "OpenAPIAuthentication", "PostgresTokenStore", "OpenIDConnect", "DPoP",
                "AsyncHTTPClientTransport", "MCPAuthentication", "ResourceDiscovery", "AuthenticatedRequestsLogging",
                "AuthenticatedRequestsMetrics",
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Logging"])),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "MCP", package: "swift-sdk", condition: .when(traits: ["MCP"])),
                .product(
                    name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: .when(traits: ["OpenAPI"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
            ],
            path: "Examples/ReadmeSnippets"
        ),
        // Fuzz targets for every parser of outside input; Scripts/fuzz builds them with libFuzzer.
        .target(name: "FuzzDriver", path: "Fuzz/FuzzDriver"),
        .executableTarget(
            name: "authreq-fuzz",
            dependencies: ["CodeFlowOAuth", "FuzzDriver", "AuthreqCLI", "OpenIDConnect", "DPoP", "ResourceDiscovery"],
            path: "Fuzz/AuthreqFuzz"
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "AuthenticatedRequests", "ResourceDiscovery",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(
                    name: "Metrics", package: "swift-metrics", condition: .when(traits: ["PostgreSQL", "Metrics"])),
                .product(
                    name: "MetricsTestKit", package: "swift-metrics",
                    condition: .when(traits: ["PostgreSQL", "Metrics"])),
                .product(
                    name: "InMemoryTracing", package: "swift-distributed-tracing",
                    condition: .when(traits: ["PostgreSQL", "Metrics"])),
                .product(
                    name: "Tracing", package: "swift-distributed-tracing",
                    condition: .when(traits: ["PostgreSQL", "Metrics"])),
            ],
            path: "Tests/TestSupport"
        ),
        .executableTarget(
            name: "authreq-test-helper",
            dependencies: [
                "AuthenticatedRequests", "OAuthFlows", "OpenIDConnect", "PostgresTokenStore", "ResourceDiscovery",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["PostgreSQL"])),
            ],
            path: "Tests/TestHelper"
        ),
        .testTarget(
            name: "AuthenticatedRequestsTests",
            dependencies: ["AuthenticatedRequests", "TestSupport", "authreq-test-helper"]
        ),
        .testTarget(
            name: "OAuthFlowsTests",
            dependencies: ["OAuthFlows", "TestSupport", "authreq-test-helper"]
        ),
        .testTarget(
            name: "CodeFlowOAuthTests",
            dependencies: ["CodeFlowOAuth", "TestSupport"]
        ),
        .testTarget(
            name: "AsyncHTTPClientTransportTests",
            dependencies: [
                "AsyncHTTPClientTransport", "OAuthFlows", "TestSupport",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(
                    name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["AsyncHTTPClient"])
                ),
            ]
        ),
        .testTarget(
            name: "AuthenticatedRequestsLoggingTests",
            dependencies: ["AuthenticatedRequestsLogging", "TestSupport"]
        ),
        .testTarget(
            name: "AuthenticatedRequestsMetricsTests",
            dependencies: [
                "AuthenticatedRequestsMetrics", "TestSupport",
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(
                    name: "InMemoryTracing", package: "swift-distributed-tracing", condition: .when(traits: ["Metrics"])
                ),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["Metrics"])),
            ]
        ),
        .testTarget(
            name: "OpenAPIAuthenticationTests",
            dependencies: [
                "OpenAPIAuthentication", "TestSupport", "DPoP",
                .product(
                    name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: .when(traits: ["OpenAPI"])),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["OpenAPI"])),
            ]
        ),
        .testTarget(
            name: "PostgresTokenStoreTests",
            dependencies: [
                "PostgresTokenStore", "OAuthFlows", "TestSupport", "authreq-test-helper",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["PostgreSQL"])),
                .product(
                    name: "InMemoryTracing", package: "swift-distributed-tracing",
                    condition: .when(traits: ["PostgreSQL"])),
                .product(
                    name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["PostgreSQL"])),
            ]
        ),
        .testTarget(
            name: "OpenIDConnectTests",
            dependencies: [
                "OpenIDConnect", "TestSupport",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "MCPAuthenticationTests",
            dependencies: [
                "MCPAuthentication", "TestSupport", "DPoP",
                .product(name: "MCP", package: "swift-sdk", condition: .when(traits: ["MCP"])),
            ]
        ),
        .testTarget(
            name: "ResourceDiscoveryTests",
            dependencies: ["ResourceDiscovery", "CodeFlowOAuth", "TestSupport"]
        ),
        .testTarget(
            name: "DPoPTests",
            dependencies: [
                "DPoP", "OAuthFlows", "CodeFlowOAuth", "TestSupport",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "AuthreqCLITests",
            dependencies: ["AuthreqCLI", "TestSupport"]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "CodeFlowOAuth", "TestSupport", "authreq-test-helper", "authreq", "OpenAPIAuthentication",
                "OpenIDConnect", "DPoP", "ResourceDiscovery", "mcp-client-example",
                "PostgresTokenStore", "MCPAuthentication", "ReadmeSnippets", "AsyncHTTPClientTransport",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "MCP", package: "swift-sdk", condition: .when(traits: ["MCP"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(
                    name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: .when(traits: ["OpenAPI"])),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["OpenAPI"])),
            ],
            // The OpenAPI document and generator settings that Scripts/generate-openapi-client reads.
            exclude: ["OpenAPI/openapi.yaml", "OpenAPI/openapi-generator-config.yaml"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
