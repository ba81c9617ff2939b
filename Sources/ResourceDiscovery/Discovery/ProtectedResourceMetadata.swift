import AuthenticatedRequests
import Foundation
import OAuthFlows

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A protected resource's metadata (RFC 9728 §2): which authorization servers issue tokens for
/// it, and what it accepts.
///
/// Nothing in it is trusted before it is checked: ``discover(for:challenges:context:)`` refuses a
/// document whose `resource` is not exactly the resource asked for, reads it over https (or http
/// to loopback) only, bounded in size and time, and never sends a credential to fetch it.
public struct ProtectedResourceMetadata: Sendable, Codable {
    /// `resource`: the resource identifier, an https URL without a fragment.
    public let resource: URL
    /// `authorization_servers`: the issuer identifiers of the servers that issue its tokens.
    public let authorizationServers: [String]
    /// `scopes_supported`; empty when absent.
    public let scopesSupported: [String]
    /// `bearer_methods_supported`; empty when absent.
    public let bearerMethodsSupported: [String]
    /// `resource_name`, for people.
    public let resourceName: String?
    /// `dpop_signing_alg_values_supported` (RFC 9728 §2); empty when absent.
    public let dpopSigningAlgValuesSupported: [String]
    /// `dpop_bound_access_tokens_required`; `false` when absent.
    public let dpopBoundAccessTokensRequired: Bool
    /// Every field, as sent.
    public let fields: [String: JSONValue]

    /// Reads metadata from a JSON object; a field of the wrong type is an error, not ignored.
    ///
    /// - Throws: ``ResourceDiscoveryError`` with code ``ResourceDiscoveryError/Code/invalidMetadata``.
    public init(fields: [String: JSONValue]) throws {
        func invalid(_ why: String) -> ResourceDiscoveryError {
            ResourceDiscoveryError(.invalidMetadata, "The protected resource metadata \(why).")
        }
        func strings(_ name: String) throws -> [String] {
            guard let value = fields[name] else { return [] }
            guard case .array(let values) = value else { throw invalid("has a \(name) that is not an array") }
            return try values.map {
                guard let string = $0.stringValue else { throw invalid("has a \(name) entry that is not a string") }
                return string
            }
        }
        guard let resourceText = fields["resource"]?.stringValue, let resource = URL(string: resourceText),
            resource.scheme != nil, resource.host != nil, resource.fragment == nil
        else { throw invalid("has no resource, or one that is not an absolute URL without a fragment") }
        self.resource = resource
        self.authorizationServers = try strings("authorization_servers")
        self.scopesSupported = try strings("scopes_supported")
        self.bearerMethodsSupported = try strings("bearer_methods_supported")
        self.dpopSigningAlgValuesSupported = try strings("dpop_signing_alg_values_supported")
        switch fields["resource_name"] {
        case nil, .null?: self.resourceName = nil
        case .string(let name)?: self.resourceName = name
        default: throw invalid("has a resource_name that is not a string")
        }
        switch fields["dpop_bound_access_tokens_required"] {
        case nil, .null?: self.dpopBoundAccessTokensRequired = false
        case .bool(let value)?: self.dpopBoundAccessTokensRequired = value
        default: throw invalid("has a dpop_bound_access_tokens_required that is not a boolean")
        }
        self.fields = fields
    }

    /// Reads metadata encoded by ``encode(to:)``: the JSON document, checked as when fetched.
    public init(from decoder: any Decoder) throws {
        guard let fields = try JSONValue(from: decoder).objectValue else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "Metadata must be a JSON object."))
        }
        try self.init(fields: fields)
    }

    /// Encodes the metadata as the JSON document it was read from.
    public func encode(to encoder: any Encoder) throws {
        try JSONValue.object(fields).encode(to: encoder)
    }

    // MARK: Discovery

    /// The metadata URLs of `resource`, in the order RFC 9728 §3.1 gives: the well-known suffix
    /// inserted before the resource's path, then at the origin's root (for a resource with a
    /// path). Query and fragment are dropped.
    public static func wellKnownURLs(for resource: URL) -> [URL] {
        guard var components = URLComponents(url: resource, resolvingAgainstBaseURL: false) else { return [] }
        components.query = nil
        components.fragment = nil
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        var urls: [URL] = []
        components.path = "/.well-known/oauth-protected-resource" + path
        if let url = components.url { urls.append(url) }
        if !path.isEmpty {
            components.path = "/.well-known/oauth-protected-resource"
            if let url = components.url { urls.append(url) }
        }
        return urls
    }

    /// The `resource_metadata` URL a `401`/`403` challenge names (RFC 9728 §5.1), if any.
    public static func metadataURL(in challenges: [AuthenticationChallenge]) -> URL? {
        challenges.lazy.compactMap { $0.parameters["resource_metadata"] }.compactMap(URL.init(string:)).first
    }

    /// Fetches and checks the metadata of `resource`: from the URL the resource's challenge names
    /// (RFC 9728 §5.1), otherwise from its well-known URLs in order (a `404` tries the next).
    ///
    /// - Parameters:
    ///   - resource: The resource the client asked for; the document's `resource` must be exactly
    ///     this URL (RFC 9728 §3.3), without query or fragment, or, for the document at the
    ///     origin's root (which was made from the origin), exactly the origin.
    ///   - challenges: The challenges of the resource's `401`/`403`, if the client got one. A
    ///     metadata URL on another origin than the resource is fetched as RFC 9728 allows, and
    ///     never receives a credential (no request of discovery does).
    ///   - context: Transport, clock and the plain-http policy; replies are capped at 1 MiB and
    ///     the context's deadline.
    /// - Throws: ``ResourceDiscoveryError``: ``ResourceDiscoveryError/Code/resourceMismatch``,
    ///   ``ResourceDiscoveryError/Code/insecureURL``, ``ResourceDiscoveryError/Code/notFound``,
    ///   ``ResourceDiscoveryError/Code/invalidMetadata``; the transport's errors.
    public static func discover(
        for resource: URL,
        challenges: [AuthenticationChallenge] = [],
        context: AuthenticationContext
    ) async throws -> ProtectedResourceMetadata {
        let expected = try canonical(resource)
        let candidates = metadataURL(in: challenges).map { [$0] } ?? wellKnownURLs(for: expected)
        for url in candidates {
            // The identifier the URL was made from (RFC 9728 §3.3): the resource; for the document
            // at the origin's root also the origin (with or without the empty path's slash), which
            // the root was made from. The origin serves both, so neither names a stranger.
            let root = url.path == "/.well-known/oauth-protected-resource" && metadataURL(in: challenges) == nil
            let identifiers =
                [expected.absoluteString] + (root ? [origin(of: expected), origin(of: expected) + "/"] : [])
            guard context.allowsInsecureHTTP || url.isSafeForSecrets else {
                throw ResourceDiscoveryError(
                    .insecureURL, "Refusing to read metadata from \(url.redactedForDisplay): use https.")
            }
            let reply = try await FormPost.get(url, context: context)
            if reply.statusCode == 404 { continue }
            let metadata = try ProtectedResourceMetadata(
                fields: FormPost.jsonObject(from: reply, now: context.clock.now))
            guard identifiers.contains(metadata.resource.absoluteString) else {
                throw ResourceDiscoveryError(
                    .resourceMismatch,
                    "The metadata at \(url.redactedForDisplay) describes another resource than "
                        + "\(expected.redactedForDisplay) (RFC 9728 §3.3); it was not used.")
            }
            return metadata
        }
        throw ResourceDiscoveryError(
            .notFound, "\(expected.redactedForDisplay) publishes no protected resource metadata.")
    }

    /// `resource` as an identifier: https (or http to loopback), no query or fragment.
    /// The metadata of the protected resource that `url` belongs to, if `url` says it is one:
    /// `url` is asked without any credential, and a `401` or `403` whose challenge names
    /// `resource_metadata` is followed. The document's `resource` must be `url` or a path prefix
    /// of it on the same origin; anything else is `nil`. For offering a sign-in (`authreq fetch`
    /// on an unknown resource), not for trusting: signing in compares the resource exactly.
    public static func offered(by url: URL, context: AuthenticationContext) async throws
        -> ProtectedResourceMetadata?
    {
        guard context.allowsInsecureHTTP || url.isSafeForSecrets,
            let metadataURL = metadataURL(in: try await challenges(of: url, context: context)),
            context.allowsInsecureHTTP || metadataURL.isSafeForSecrets
        else { return nil }
        let reply = try await FormPost.get(metadataURL, context: context)
        let metadata = try ProtectedResourceMetadata(fields: FormPost.jsonObject(from: reply, now: context.clock.now))
        let asked = try canonical(url)
        let resource = metadata.resource
        let sameOrigin =
            resource.scheme?.lowercased() == asked.scheme?.lowercased()
            && resource.host?.lowercased() == asked.host?.lowercased() && resource.port == asked.port
        let prefix = resource.path.hasSuffix("/") ? resource.path : resource.path + "/"
        guard sameOrigin, asked.path == resource.path || asked.path.hasPrefix(prefix) || resource.path.isEmpty else {
            return nil
        }
        return metadata
    }

    /// The challenges of `url`'s answer to a request without any credential: those of a `401`
    /// or `403`, none otherwise. Bounded like every authorization server request.
    static func challenges(of url: URL, context: AuthenticationContext) async throws -> [AuthenticationChallenge] {
        var probe = URLRequest(url: url)
        probe.setValue("application/json", forHTTPHeaderField: "Accept")
        let (_, response) = try await context.transport.send(probe, options: context.authorizationServerOptions)
        guard response.statusCode == 401 || response.statusCode == 403 else { return [] }
        return AuthenticationChallenge.parse(response.value(forHTTPHeaderField: "WWW-Authenticate") ?? "")
    }

    /// `scheme://host[:port]` of `url`, as written.
    static func origin(of url: URL) -> String {
        var components = URLComponents()
        (components.scheme, components.host, components.port) = (url.scheme, url.host, url.port)
        return components.url?.absoluteString ?? ""
    }

    static func canonical(_ resource: URL) throws -> URL {
        guard var components = URLComponents(url: resource, resolvingAgainstBaseURL: false),
            components.host != nil
        else {
            throw ResourceDiscoveryError(.invalidMetadata, "\(resource.redactedForDisplay) is not an absolute URL.")
        }
        components.query = nil
        components.fragment = nil
        guard let url = components.url else {
            throw ResourceDiscoveryError(.invalidMetadata, "\(resource.redactedForDisplay) is not an absolute URL.")
        }
        return url
    }
}
