import AuthenticatedRequests
import Foundation
import OAuthFlows
import ResourceDiscovery
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 9728 discovery and the authorization server behind it, in memory: where the metadata is
/// looked for, in which order, and every refusal, typed, with nothing used from a document that
/// does not check out.
@Suite struct ProtectedResourceMetadataTests {
    let clock = TestClock()
    let seen = Locked<[(url: String, authorization: String?)]>([])

    /// A network of documents by URL; everything else is a 404.
    func context(_ documents: [String: String]) -> AuthenticationContext {
        let seen = self.seen
        return AuthenticationContext(
            transport: InMemoryTransport { request in
                let url = request.url?.absoluteString ?? ""
                seen.withLock { $0.append((url, request.value(forHTTPHeaderField: "Authorization"))) }
                guard let body = documents[url] else {
                    return try InMemoryTransport.reply(to: request, status: 404, json: "{}")
                }
                return try InMemoryTransport.reply(to: request, json: body)
            }, clock: clock)
    }

    var requested: [String] { seen.withLock { $0.map(\.url) } }

    @Test func theWellKnownURLsArePathInsertedThenTheRoot() {
        let urls = ProtectedResourceMetadata.wellKnownURLs(for: URL(string: "https://api.example.com/mcp/v1?x=1")!)
        #expect(
            urls.map(\.absoluteString) == [
                "https://api.example.com/.well-known/oauth-protected-resource/mcp/v1",
                "https://api.example.com/.well-known/oauth-protected-resource",
            ])
        #expect(
            ProtectedResourceMetadata.wellKnownURLs(for: URL(string: "https://api.example.com")!).map(\.absoluteString)
                == ["https://api.example.com/.well-known/oauth-protected-resource"])
    }

    @Test func theChallengesMetadataURLWinsAndNoCredentialIsSentToIt() async throws {
        let metadataURL = "https://meta.example.net/prm"
        let context = context([
            metadataURL:
                #"{"resource":"https://api.example.com/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["read"]}"#
        ])
        let challenges = AuthenticationChallenge.parse(#"Bearer resource_metadata="\#(metadataURL)", scope="read""#)
        let metadata = try await ProtectedResourceMetadata.discover(
            for: URL(string: "https://api.example.com/mcp")!, challenges: challenges, context: context)
        #expect(metadata.authorizationServers == ["https://auth.example.com"])
        #expect(metadata.scopesSupported == ["read"])
        #expect(requested == [metadataURL], "another origin, as RFC 9728 allows")
        #expect(seen.withLock { $0.allSatisfy { $0.authorization == nil } }, "discovery carries no credential")
    }

    @Test func withoutAChallengeThePathInsertedURLIsTriedFirstThenTheRoot() async throws {
        let context = context([
            "https://api.example.com/.well-known/oauth-protected-resource":
                #"{"resource":"https://api.example.com/mcp","authorization_servers":["https://auth.example.com"]}"#
        ])
        let metadata = try await ProtectedResourceMetadata.discover(
            for: URL(string: "https://api.example.com/mcp")!, context: context)
        #expect(metadata.resource.absoluteString == "https://api.example.com/mcp")
        #expect(
            requested == [
                "https://api.example.com/.well-known/oauth-protected-resource/mcp",
                "https://api.example.com/.well-known/oauth-protected-resource",
            ])
    }

    @Test(arguments: ["https://api.example.com", "https://api.example.com/"])
    func theRootDocumentMayNameTheOriginItWasMadeFrom(resource: String) async throws {
        let context = context([
            "https://api.example.com/.well-known/oauth-protected-resource":
                #"{"resource":"\#(resource)","authorization_servers":["https://auth.example.com"]}"#
        ])
        let metadata = try await ProtectedResourceMetadata.discover(
            for: URL(string: "https://api.example.com/mcp")!, context: context)
        #expect(metadata.resource.absoluteString == resource)
    }

    @Test func aDocumentNamedByTheChallengeMustNameTheResourceItself() async throws {
        let metadataURL = "https://api.example.com/.well-known/oauth-protected-resource"
        let context = context([
            metadataURL: #"{"resource":"https://api.example.com","authorization_servers":["https://auth.example.com"]}"#
        ])
        let challenges = AuthenticationChallenge.parse(#"Bearer resource_metadata="\#(metadataURL)""#)
        let error = await #expect(throws: ResourceDiscoveryError.self) {
            _ = try await ProtectedResourceMetadata.discover(
                for: URL(string: "https://api.example.com/mcp")!, challenges: challenges, context: context)
        }
        #expect(error?.code == .resourceMismatch)
    }

    @Test(arguments: [
        "https://api.example.com/other", "https://API.example.com/mcp", "https://api.example.com:443/mcp",
        "https://api.example.com/mcp/",
    ])
    func aDocumentForAnotherResourceIsRefused(resource: String) async throws {
        let context = context([
            "https://api.example.com/.well-known/oauth-protected-resource/mcp":
                #"{"resource":"\#(resource)","authorization_servers":["https://evil.example"]}"#
        ])
        let error = await #expect(throws: ResourceDiscoveryError.self) {
            try await ProtectedResourceMetadata.discover(
                for: URL(string: "https://api.example.com/mcp")!, context: context)
        }
        #expect(error?.code == .resourceMismatch, "exact comparison: \(resource)")
    }

    @Test func plainHTTPToAnotherHostIsRefusedBeforeAnythingIsSent() async throws {
        let challenges = AuthenticationChallenge.parse(#"Bearer resource_metadata="http://meta.example.net/prm""#)
        let error = await #expect(throws: ResourceDiscoveryError.self) {
            try await ProtectedResourceMetadata.discover(
                for: URL(string: "https://api.example.com/mcp")!, challenges: challenges, context: context([:]))
        }
        #expect(error?.code == .insecureURL)
        #expect(requested.isEmpty)
    }

    @Test(arguments: [
        #"{"authorization_servers":["https://a"]}"#, #"{"resource":"https://api.example.com/mcp#x"}"#,
        #"{"resource":"https://api.example.com/mcp","authorization_servers":"https://a"}"#,
        #"{"resource":"https://api.example.com/mcp","authorization_servers":[7]}"#,
        #"{"resource":"https://api.example.com/mcp","dpop_bound_access_tokens_required":"yes"}"#, "[]",
    ])
    func malformedMetadataIsATypedError(document: String) async throws {
        let context = context(["https://api.example.com/.well-known/oauth-protected-resource/mcp": document])
        await #expect(throws: (any Error).self) {
            try await ProtectedResourceMetadata.discover(
                for: URL(string: "https://api.example.com/mcp")!, context: context)
        }
    }

    @Test func noDocumentAnywhereIsNotFound() async throws {
        let error = await #expect(throws: ResourceDiscoveryError.self) {
            try await ProtectedResourceMetadata.discover(
                for: URL(string: "https://api.example.com/mcp")!, context: context([:]))
        }
        #expect(error?.code == .notFound)
    }

    // MARK: The authorization server

    @Test func authorizationServerURLsFollowTheMCPOrder() {
        #expect(
            AuthorizationServerMetadata.metadataURLs(forIssuer: URL(string: "https://auth.example.com/tenant1")!)
                .map(\.absoluteString) == [
                    "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                    "https://auth.example.com/.well-known/openid-configuration/tenant1",
                    "https://auth.example.com/tenant1/.well-known/openid-configuration",
                ])
        #expect(
            AuthorizationServerMetadata.metadataURLs(forIssuer: URL(string: "https://auth.example.com")!)
                .map(\.absoluteString) == [
                    "https://auth.example.com/.well-known/oauth-authorization-server",
                    "https://auth.example.com/.well-known/openid-configuration",
                ])
    }

    @Test func theFirstDocumentFoundIsUsedAndItsIssuerMustBeExact() async throws {
        let issuer = "https://auth.example.com/tenant1"
        let found = context([
            "https://auth.example.com/tenant1/.well-known/openid-configuration":
                #"{"issuer":"\#(issuer)","token_endpoint":"\#(issuer)/token"}"#
        ])
        let metadata = try await AuthorizationServerMetadata.discover(anyDocumentOf: issuer, context: found)
        #expect(metadata.tokenEndpoint?.absoluteString == "\(issuer)/token")
        #expect(requested.count == 3, "the two path-inserted URLs answered 404 first")

        for other in [
            "https://auth.example.com/tenant1/", "https://AUTH.example.com/tenant1",
            "https://auth.example.com:443/tenant1",
        ] {
            let mismatched = context([
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1":
                    #"{"issuer":"\#(other)","token_endpoint":"https://evil.example/token"}"#
            ])
            let error = await #expect(throws: ResourceDiscoveryError.self) {
                try await AuthorizationServerMetadata.discover(anyDocumentOf: issuer, context: mismatched)
            }
            #expect(error?.code == .issuerMismatch, "\(other)")
        }
    }

    // MARK: The cache

    @Test func theCacheDiscoversOncePerLifetimeAndANewMetadataURLReplacesIt() async throws {
        let document =
            #"{"resource":"https://api.example.com/mcp","authorization_servers":["https://auth.example.com"]}"#
        let moved = #"{"resource":"https://api.example.com/mcp","authorization_servers":["https://auth2.example.com"]}"#
        let cache = ProtectedResourceMetadataCache(
            lifetime: 600,
            context: context([
                "https://api.example.com/.well-known/oauth-protected-resource/mcp": document,
                "https://api.example.com/prm-v2": moved,
            ]))
        let resource = URL(string: "https://api.example.com/mcp")!
        for _ in 0..<5 { _ = try await cache.metadata(for: resource) }
        #expect(await cache.discoveries == 1)
        let challenge = AuthenticationChallenge.parse(#"Bearer resource_metadata="https://api.example.com/prm-v2""#)
        #expect(
            try await cache.metadata(for: resource, challenges: challenge).authorizationServers == [
                "https://auth2.example.com"
            ])
        #expect(await cache.discoveries == 2)
        _ = try await cache.metadata(for: resource, challenges: challenge)
        #expect(await cache.discoveries == 2, "the same metadata URL: cached")
        clock.advance(by: 601)
        _ = try await cache.metadata(for: resource)
        #expect(await cache.discoveries == 3, "past its lifetime")
    }
}
