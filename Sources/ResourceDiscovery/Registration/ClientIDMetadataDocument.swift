import AuthenticatedRequests
import Foundation
import OAuthFlows

/// A Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document): the client id is
/// the HTTPS URL of a JSON document that the application publishes, and an authorization server
/// that advertises `client_id_metadata_document_supported` fetches it instead of asking the
/// client to register.
///
/// Build it from the app's settings, publish ``fields`` at ``url``, and hand it to
/// ``ClientRegistrationPolicy``:
///
/// ```swift
/// let document = try ClientIDMetadataDocument(
///     url: URL(string: "https://notes.example/oauth/client.json")!,
///     metadata: ClientMetadata(clientName: "Notes", redirectURIs: [URL(string: "http://127.0.0.1/callback")!]))
/// ```
public struct ClientIDMetadataDocument: Sendable, Hashable {
    /// Where the document is published; also the `client_id`.
    public let url: URL
    /// What the document says of the client.
    public let metadata: ClientMetadata

    /// Creates a document, checking what the draft requires of its URL and contents.
    ///
    /// - Throws: `ClientRegistrationError` with
    ///   `ClientRegistrationError.Code.invalidMetadataDocument` when the URL is not `https`,
    ///   has no path, has a fragment, user info, or `.`/`..` segments, or when the metadata uses
    ///   a shared secret (`client_secret_*`: a published document cannot hold a secret);
    ///   `ClientRegistrationError.Code.invalidClientMetadata` when the metadata itself is
    ///   invalid.
    public init(url: URL, metadata: ClientMetadata) throws {
        func invalid(_ why: String) -> ClientRegistrationError {
            ClientRegistrationError(.invalidMetadataDocument, "The client ID metadata document URL \(why).")
        }
        guard url.scheme?.lowercased() == "https", url.host != nil else { throw invalid("is not https") }
        guard url.fragment == nil, url.user == nil, url.password == nil else {
            throw invalid("has a fragment or user info")
        }
        let segments = url.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard !segments.isEmpty, segments.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
            throw invalid("must have a path without empty, '.' or '..' segments")
        }
        if let method = metadata.tokenEndpointAuthMethod, method.hasPrefix("client_secret") {
            throw ClientRegistrationError(
                .invalidMetadataDocument, "A client ID metadata document cannot use \(method): it holds no secret.")
        }
        try metadata.validate()
        self.url = url
        self.metadata = metadata
    }

    /// The document to publish: the metadata with `client_id` set to ``url``.
    public var fields: [String: JSONValue] {
        var fields = metadata.fields
        fields["client_id"] = .string(url.absoluteString)
        return fields
    }

    /// The document as JSON, keys sorted.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(JSONValue.object(fields))
    }

    /// How the client authenticates at the token endpoint: public (`none`), or with the
    /// `private_key_jwt` signer the app gives.
    func clientAuthentication(signer: (any ClientAssertionSigner)?) -> ClientAuthentication {
        if let signer, metadata.tokenEndpointAuthMethod == "private_key_jwt" {
            return .assertion(id: url.absoluteString, signer: signer)
        }
        return .none(id: url.absoluteString)
    }
}
