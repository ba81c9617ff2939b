import AuthenticatedRequests
import Foundation
import OAuthFlows

/// An OpenID provider: its discovered metadata and its signing keys.
public struct OpenIDProvider: Sendable {
    /// The metadata (`/.well-known/openid-configuration`).
    public let metadata: AuthorizationServerMetadata
    /// The signing keys of `jwks_uri`, cached.
    public let keys: JSONWebKeySet

    /// `issuer`.
    public var issuer: String { metadata.issuer }
    /// `userinfo_endpoint`.
    public var userInfoEndpoint: URL? { url("userinfo_endpoint") }
    /// `end_session_endpoint` (RP-Initiated Logout 1.0).
    public var endSessionEndpoint: URL? { url("end_session_endpoint") }
    /// `id_token_signing_alg_values_supported`; RS256 when absent.
    public var idTokenSigningAlgorithms: [String] {
        guard case .array(let values)? = metadata.fields["id_token_signing_alg_values_supported"] else {
            return ["RS256"]
        }
        return values.compactMap(\.stringValue)
    }

    /// Creates the provider from metadata.
    ///
    /// - Parameters:
    ///   - metadata: The provider's metadata.
    ///   - minimumKeyRefetchInterval: The least time between two fetches of the keys, in seconds.
    ///   - context: Transport and clock for fetching the keys.
    /// - Throws: ``OpenIDConnectError`` ``OpenIDConnectError/Code/missingEndpoint`` without `jwks_uri`.
    public init(
        metadata: AuthorizationServerMetadata, minimumKeyRefetchInterval: TimeInterval = 60,
        context: AuthenticationContext = AuthenticationContext(transport: URLSessionTransport.shared)
    ) throws {
        guard let jwksURI = metadata.jwksURI else {
            throw OpenIDConnectError(.missingEndpoint, "The provider's metadata has no jwks_uri.")
        }
        self.metadata = metadata
        self.keys = JSONWebKeySet(url: jwksURI, minimumRefetchInterval: minimumKeyRefetchInterval, context: context)
    }

    /// Fetches the provider's metadata from `<issuer>/.well-known/openid-configuration` and
    /// checks that it names `issuer`.
    public static func discover(
        issuer: URL, minimumKeyRefetchInterval: TimeInterval = 60,
        context: AuthenticationContext = AuthenticationContext(transport: URLSessionTransport.shared)
    ) async throws -> OpenIDProvider {
        let metadata = try await AuthorizationServerMetadata.discover(
            issuer: issuer, document: .openIDConfiguration, context: context)
        return try OpenIDProvider(
            metadata: metadata, minimumKeyRefetchInterval: minimumKeyRefetchInterval, context: context)
    }

    /// ``discover(issuer:minimumKeyRefetchInterval:context:)`` over `authenticator`'s transport
    /// and clock: set the transport once, on the authenticator.
    ///
    /// - Parameters:
    ///   - issuer: The provider's issuer.
    ///   - minimumKeyRefetchInterval: The least time between two fetches of the keys, in seconds.
    ///   - authenticator: Whose context (transport, clock) to use.
    public static func discover(
        issuer: URL, minimumKeyRefetchInterval: TimeInterval = 60, using authenticator: OAuthAuthenticator
    ) async throws -> OpenIDProvider {
        try await discover(
            issuer: issuer, minimumKeyRefetchInterval: minimumKeyRefetchInterval, context: authenticator.context)
    }

    private func url(_ name: String) -> URL? {
        metadata.fields[name]?.stringValue.flatMap(URL.init(string:))
    }
}
