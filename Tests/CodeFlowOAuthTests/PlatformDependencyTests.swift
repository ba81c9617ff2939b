import Foundation
import Testing

/// Apple apps build only what they use: read from the package description itself
/// (`swift package dump-package`), an iOS, tvOS, watchOS or visionOS app that uses
/// `AuthenticatedRequests`, `OAuthFlows`, `CodeFlowOAuth`, `OpenIDConnect`, `DPoP` and
/// `ResourceDiscovery` builds no SwiftNIO, while macOS and Linux get the loopback receiver's.
@Suite struct PlatformDependencyTests {
    /// The package's own targets and, for each, what it depends on under which platforms.
    struct Manifest {
        struct Edge {
            /// A target of the package, or `package/product` of another package.
            let name: String
            let isProduct: Bool
            /// The platforms the edge is limited to; `nil` for every platform.
            let platforms: [String]?
        }
        let targets: [String: [Edge]]

        init(json: Data) throws {
            let root = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
            var targets: [String: [Edge]] = [:]
            for target in try #require(root["targets"] as? [[String: Any]]) {
                let name = try #require(target["name"] as? String)
                var edges: [Edge] = []
                for dependency in target["dependencies"] as? [[String: Any]] ?? [] {
                    for (kind, value) in dependency {
                        let parts = value as? [Any] ?? []
                        let condition = parts.compactMap { $0 as? [String: Any] }.first
                        let platforms = condition?["platformNames"] as? [String]
                        switch kind {
                        case "product":
                            let product = parts.first as? String ?? ""
                            let package = parts.count > 1 ? parts[1] as? String ?? "" : ""
                            edges.append(Edge(name: "\(package)/\(product)", isProduct: true, platforms: platforms))
                        case "byName", "target":
                            edges.append(
                                Edge(name: parts.first as? String ?? "", isProduct: false, platforms: platforms))
                        default:
                            continue
                        }
                    }
                }
                targets[name] = edges
            }
            self.targets = targets
        }

        /// The other packages' products that `roots` reach on `platform`.
        func products(reachedFrom roots: [String], on platform: String) -> Set<String> {
            var seen = Set<String>()
            var products = Set<String>()
            var queue = roots
            while let target = queue.popLast() {
                guard seen.insert(target).inserted else { continue }
                for edge in targets[target] ?? [] where edge.platforms.map({ $0.contains(platform) }) ?? true {
                    if edge.isProduct { products.insert(edge.name) } else { queue.append(edge.name) }
                }
            }
            return products
        }
    }

    static func manifest() throws -> Manifest {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // A scratch folder of its own: `swift test` holds the lock of the package's `.build`.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("dump-package-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        process.arguments = [
            "swift", "package", "--package-path", root.path, "--scratch-path", scratch.path, "dump-package",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "swift package dump-package failed")
        return try Manifest(json: data)
    }

    static let appProducts = [
        "AuthenticatedRequests", "OAuthFlows", "CodeFlowOAuth", "OpenIDConnect", "DPoP", "ResourceDiscovery",
    ]

    @Test func anAppleMobileAppBuildsNoSwiftNIO() throws {
        let manifest = try Self.manifest()
        for platform in ["ios", "maccatalyst", "tvos", "watchos", "visionos"] {
            let products = manifest.products(reachedFrom: Self.appProducts, on: platform)
            #expect(!products.contains { $0.hasPrefix("swift-nio/") }, "\(platform) builds \(products.sorted())")
            #expect(products.contains("jwt-kit/JWTKit"), "the walk sees the other dependencies: \(products.sorted())")
        }
    }

    @Test func macOSAndLinuxGetTheLoopbackReceiversSwiftNIO() throws {
        let manifest = try Self.manifest()
        for platform in ["macos", "linux"] {
            let products = manifest.products(reachedFrom: ["CodeFlowOAuth"], on: platform)
            #expect(products.isSuperset(of: ["swift-nio/NIOCore", "swift-nio/NIOPosix", "swift-nio/NIOHTTP1"]))
        }
    }
}
