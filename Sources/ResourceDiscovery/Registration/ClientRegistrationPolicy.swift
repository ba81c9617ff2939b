import AuthenticatedRequests
import Foundation
import OAuthFlows

/// How a client gets a client id at an authorization server it meets through a resource, tried in
/// this order:
/// 1. a client registered in advance for that issuer (``preRegistered``);
/// 2. a Client ID Metadata Document (``clientIDMetadataDocument``), when the server advertises
///    `client_id_metadata_document_supported`;
/// 3. Dynamic Client Registration (RFC 7591) with ``dynamicRegistration``, when the server has a
///    `registration_endpoint`. The registration is stored under the issuer and reused by every
///    launch and process.
///
/// ```swift
/// let policy = ClientRegistrationPolicy.dynamic(clientName: "Notes")
/// ```
public struct ClientRegistrationPolicy: Sendable {
    /// Clients registered in advance, by issuer (compared exactly).
    public var preRegistered: [String: ClientAuthentication]
    /// The app's published Client ID Metadata Document, if it has one.
    public var clientIDMetadataDocument: ClientIDMetadataDocument?
    /// Signs client assertions when the document says `private_key_jwt`.
    public var assertionSigner: (any ClientAssertionSigner)?
    /// What to register dynamically; `nil` never registers.
    public var dynamicRegistration: ClientMetadata?
    /// An initial access token for servers that require one to register (RFC 7591 §3).
    public var initialAccessToken: String?
    /// The switches for servers that deviate from the RFCs, applied to the clients this policy
    /// registers dynamically; none unless given. MCP servers built on the MCP Python SDK need
    /// `.clientIDInBodyWithBasicAuthentication`: their token endpoint reads `client_id` from the
    /// body even from a client that authenticates with HTTP Basic.
    public var compatibility: ServerCompatibility = []

    /// Creates a policy; with no argument, nothing can be registered and only
    /// ``preRegistered`` clients work.
    public init(
        preRegistered: [String: ClientAuthentication] = [:],
        clientIDMetadataDocument: ClientIDMetadataDocument? = nil,
        assertionSigner: (any ClientAssertionSigner)? = nil,
        dynamicRegistration: ClientMetadata? = nil,
        initialAccessToken: String? = nil
    ) {
        self.preRegistered = preRegistered
        self.clientIDMetadataDocument = clientIDMetadataDocument
        self.assertionSigner = assertionSigner
        self.dynamicRegistration = dynamicRegistration
        self.initialAccessToken = initialAccessToken
    }

    /// Dynamic registration of a public native app that signs in through a loopback redirect
    /// (`http://127.0.0.1/callback`, registered with a port chosen at registration, which every
    /// sign-in of that registration listens on: servers that compare redirect URIs exactly, port
    /// included, accept it), with `compatibility` switches for the registered client.
    public static func dynamic(
        clientName: String,
        redirectURIs: [URL] = [ResourceSignIn.defaultRedirectURI],
        softwareID: String? = nil,
        softwareVersion: String? = nil,
        compatibility: ServerCompatibility = []
    ) -> ClientRegistrationPolicy {
        var policy = ClientRegistrationPolicy(
            dynamicRegistration: ClientMetadata(
                clientName: clientName, redirectURIs: redirectURIs, softwareID: softwareID,
                softwareVersion: softwareVersion))
        policy.compatibility = compatibility
        return policy
    }
}

extension ClientRegistrationPolicy: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The issuers of the pre-registered clients, the document's URL and the name registered
    /// dynamically; the initial access token and the clients' secrets are redacted.
    public var description: String {
        var parts: [String] = []
        if !preRegistered.isEmpty {
            parts.append(
                "preRegistered: ["
                    + preRegistered.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
                    .joined(separator: ", ") + "]")
        }
        if let clientIDMetadataDocument { parts.append("clientIDMetadataDocument: \(clientIDMetadataDocument.url)") }
        if let dynamicRegistration {
            parts.append("dynamicRegistration: \(dynamicRegistration.clientName ?? "unnamed client")")
        }
        if initialAccessToken != nil { parts.append("initialAccessToken: \(Redaction.placeholder)") }
        return "ClientRegistrationPolicy(" + parts.joined(separator: ", ") + ")"
    }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror showing only the redacted description, to `dump` and debuggers.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
