import AuthenticatedRequests
import Foundation
import OAuthFlows

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension AuthorizationServerMetadata {
    /// The metadata URLs of `issuer`, in the order the MCP authorization specification
    /// (2026-07-28) lists them. With a path (`https://auth.example.com/tenant1`): RFC 8414 with the
    /// suffix inserted before the path, OpenID Connect Discovery inserted before the path, then
    /// appended to it. Without a path: RFC 8414, then OpenID Connect Discovery.
    public static func metadataURLs(forIssuer issuer: URL) -> [URL] {
        guard var components = URLComponents(url: issuer, resolvingAgainstBaseURL: false) else { return [] }
        components.query = nil
        components.fragment = nil
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        let paths =
            path.isEmpty
            ? ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]
            : [
                "/.well-known/oauth-authorization-server\(path)", "/.well-known/openid-configuration\(path)",
                "\(path)/.well-known/openid-configuration",
            ]
        return paths.compactMap { suffix in
            var url = components
            url.path = suffix
            return url.url
        }
    }

    /// Fetches the metadata of `issuer` from the first of ``metadataURLs(forIssuer:)`` that has
    /// a document (a `404` tries the next), and checks that it names exactly `issuer`: no case
    /// folding, port elision or trailing-slash normalisation (RFC 8414 §3.3).
    ///
    /// - Throws: ``ResourceDiscoveryError`` ``ResourceDiscoveryError/Code/issuerMismatch`` at the
    ///   first document that names another issuer (no further URL is tried: it may be an
    ///   attack), ``ResourceDiscoveryError/Code/notFound`` when none has a document; the
    ///   transport's and the parser's errors.
    public static func discover(
        anyDocumentOf issuer: String,
        context: AuthenticationContext
    ) async throws -> AuthorizationServerMetadata {
        guard let issuerURL = URL(string: issuer), issuerURL.host != nil else {
            throw ResourceDiscoveryError(.invalidMetadata, "The issuer '\(issuer)' is not an absolute URL.")
        }
        for url in metadataURLs(forIssuer: issuerURL) {
            let reply = try await FormPost.get(url, context: context)
            if reply.statusCode == 404 { continue }
            let metadata = try AuthorizationServerMetadata(
                fields: FormPost.jsonObject(from: reply, now: context.clock.now))
            guard metadata.issuer == issuer else {
                throw ResourceDiscoveryError(
                    .issuerMismatch,
                    "The metadata at \(url.redactedForDisplay) names another issuer than \(issuer); it was not used.")
            }
            return metadata
        }
        throw ResourceDiscoveryError(.notFound, "\(issuer) publishes no authorization server metadata.")
    }
}
