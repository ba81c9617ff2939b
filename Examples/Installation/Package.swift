// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "MyService",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [
        // No release is tagged yet: follow main (or pin a revision) until 1.0.0.
        .package(
            url: "https://github.com/OWNER/AuthenticatedRequests.git", branch: "main",
            traits: ["AsyncHTTPClient"])  // optional: AsyncHTTPClient, Logging, MCP, Metrics, OpenAPI, PostgreSQL
    ],
    targets: [
        .executableTarget(
            name: "MyService",
            dependencies: [
                .product(name: "OAuthFlows", package: "AuthenticatedRequests"),
                .product(name: "AsyncHTTPClientTransport", package: "AuthenticatedRequests"),
            ])
    ]
)
