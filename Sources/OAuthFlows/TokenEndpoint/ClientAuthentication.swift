import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How a client proves its identity at the authorization server (RFC 6749 §2.3), as a value.
///
/// Exactly one method is used per request: a confidential client sends its secret either in the
/// `Authorization` header or in the body, never both; a public client sends only `client_id`.
public struct ClientAuthentication: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    private enum Method: Sendable {
        case basic(secret: String)
        case post(secret: String)
        case none
        case unidentified
        case assertion(any ClientAssertionSigner)
        case mutualTLS(selfSigned: Bool)
    }

    /// `client_id`.
    public let clientID: String
    private let method: Method
    /// The compatibility switches for servers that deviate from the RFCs; none by default.
    public private(set) var compatibility: ServerCompatibility = []
    /// Other secrets that come with this client (its registration access token, the initial
    /// access token it was registered with): never sent to the token endpoint, but removed from
    /// whatever its replies say, like the client's own secret.
    private var heldSecrets: [String] = []

    private init(clientID: String, method: Method) {
        self.clientID = clientID
        self.method = method
    }

    /// This client with `compatibility` switched on, for a server that needs it.
    public func with(_ compatibility: ServerCompatibility) -> ClientAuthentication {
        var copy = self
        copy.compatibility.formUnion(compatibility)
        return copy
    }

    /// `client_secret_basic` (RFC 6749 §2.3.1): HTTP Basic with the id and secret each
    /// form-urlencoded first.
    public static func clientSecretBasic(id: String, secret: String) -> ClientAuthentication {
        ClientAuthentication(clientID: id, method: .basic(secret: secret))
    }

    /// `client_secret_post` (RFC 6749 §2.3.1): `client_id` and `client_secret` in the body.
    public static func clientSecretPost(id: String, secret: String) -> ClientAuthentication {
        ClientAuthentication(clientID: id, method: .post(secret: secret))
    }

    /// `none`: a public client (RFC 6749 §2.1), identified by `client_id` in the body.
    public static func none(id: String) -> ClientAuthentication {
        ClientAuthentication(clientID: id, method: .none)
    }

    /// No client authentication and no `client_id` at all: for a grant whose assertion is the
    /// only credential, which names the client itself (a workload's token or a signed assertion
    /// with the JWT bearer grant, RFC 7523 §3.1: client authentication is optional there; MCP's
    /// SEP-1933 sends none). ``clientID`` is empty.
    public static let unidentified = ClientAuthentication(clientID: "", method: .unidentified)

    /// A signed JWT assertion (RFC 7523 §2.2, OpenID Connect Core §9): `private_key_jwt` or
    /// `client_secret_jwt`, signed by `signer` for each request. The `OpenIDConnect` module
    /// provides both signers.
    ///
    /// - Parameters:
    ///   - id: The client's identifier.
    ///   - signer: Signs each assertion.
    ///   - issuer: The authorization server's issuer identifier, which RFC 10070 makes the one
    ///     audience of a client assertion (the signers' default). Flows and endpoints made from a
    ///     server's metadata fill it in (``AuthorizationServerMetadata``, the OpenID and resource
    ///     sign-ins); give it here for a client configured with endpoint URLs only.
    public static func assertion(id: String, signer: any ClientAssertionSigner, issuer: String? = nil)
        -> ClientAuthentication
    {
        var client = ClientAuthentication(clientID: id, method: .assertion(signer))
        client.issuer = issuer
        return client
    }

    /// `tls_client_auth` (RFC 8705 §2.1): the client is authenticated by the PKI certificate its
    /// transport presents (`AsyncHTTPClientTransport(clientIdentity:)`), registered by its subject
    /// or a subject alternative name; `client_id` goes in the body, no secret anywhere.
    ///
    /// Requests then go to the server's `mtls_endpoint_aliases` where it has them
    /// (``usesMutualTLS``), and fail before anything is sent when the transport presents no
    /// client certificate.
    public static func tlsClientAuth(id: String) -> ClientAuthentication {
        ClientAuthentication(clientID: id, method: .mutualTLS(selfSigned: false))
    }

    /// `self_signed_tls_client_auth` (RFC 8705 §2.2): like ``tlsClientAuth(id:)``, with a
    /// self-signed certificate registered with the client (its `jwks` or `jwks_uri`).
    public static func selfSignedTLSClientAuth(id: String) -> ClientAuthentication {
        ClientAuthentication(clientID: id, method: .mutualTLS(selfSigned: true))
    }

    /// This client sending its requests over mutual TLS while it authenticates by its own method
    /// (`private_key_jwt`, a secret): for certificate-bound tokens (RFC 8705 §3) without
    /// certificate authentication, as FAPI 2.0 allows. Requests go to the server's
    /// `mtls_endpoint_aliases`, and fail before anything is sent when the transport presents no
    /// client certificate. The `tls_client_auth` methods use mutual TLS already.
    public func usingMutualTLS() -> ClientAuthentication {
        var copy = self
        copy.sendsOverMutualTLS = true
        return copy
    }

    private var sendsOverMutualTLS = false

    /// Whether this client's requests go over mutual TLS: its method is `tls_client_auth` or
    /// `self_signed_tls_client_auth`, or it was made with ``usingMutualTLS()``. Such a client uses
    /// the server's `mtls_endpoint_aliases` (RFC 8705 §5) and needs a transport that presents a
    /// client certificate.
    public var usesMutualTLS: Bool {
        if case .mutualTLS = method { return true }
        return sendsOverMutualTLS
    }

    /// The issuer identifier of the authorization server this client authenticates at, when
    /// known: the audience of its assertions (RFC 10070). `nil` until given or discovered.
    public private(set) var issuer: String?

    /// This client at the authorization server whose issuer identifier is `issuer`, unless it
    /// already names one: what flows built from a server's metadata use.
    public func at(issuer: String) -> ClientAuthentication {
        guard self.issuer == nil else { return self }
        var copy = self
        copy.issuer = issuer
        return copy
    }

    /// The method's registered name (RFC 8414 `token_endpoint_auth_methods_supported`).
    public var methodName: String {
        switch method {
        case .basic: "client_secret_basic"
        case .post: "client_secret_post"
        case .none, .unidentified: "none"
        case .assertion(let signer): signer.methodName
        case .mutualTLS(let selfSigned): selfSigned ? "self_signed_tls_client_auth" : "tls_client_auth"
        }
    }

    /// Whether the client has a secret.
    public var isConfidential: Bool {
        switch method {
        case .none, .unidentified: return false
        case .basic, .post, .assertion, .mutualTLS: return true
        }
    }

    /// This client, also holding `secrets` (a registration access token, an initial access
    /// token) that every error built from a reply to its requests leaves out.
    package func holding(_ secrets: [String]) -> ClientAuthentication {
        var copy = self
        copy.heldSecrets.append(contentsOf: secrets.filter { !copy.heldSecrets.contains($0) })
        return copy
    }

    /// Every secret of this client, for redacting replies that echo one: its secret and the
    /// secrets it holds.
    package var secretValues: [String] { [secret].compactMap { $0 } + heldSecrets }

    /// The client's secret, for redacting replies that echo it.
    var secret: String? {
        switch method {
        case .basic(let secret), .post(let secret): secret
        case .none, .unidentified, .assertion, .mutualTLS: nil
        }
    }

    /// Whether ``authenticate(_:parameters:)`` puts `client_id` in the body.
    var addsClientIDToBody: Bool {
        switch method {
        case .basic: compatibility.contains(.clientIDInBodyWithBasicAuthentication)
        case .unidentified: false
        case .post, .none, .assertion, .mutualTLS: true
        }
    }

    /// Adds the client's credentials to a form request: a header, or body parameters. An
    /// assertion is signed for `request`'s URL.
    ///
    /// - Returns: The secrets added (an assertion), for redaction.
    func authenticate(_ request: inout URLRequest, parameters: inout [(String, String)]) async throws -> [String] {
        switch method {
        case .basic(let secret):
            // RFC 6749 §2.3.1: form-urlencode id and secret, then Base64. Spaces become %20, not
            // `+`: both decode to a space, and servers that percent-decode without form rules
            // (Authlib among them) read %20 correctly.
            let pair =
                FormEncoding.encode(clientID, spaceAsPlus: false) + ":"
                + FormEncoding.encode(secret, spaceAsPlus: false)
            request.setValue("Basic \(Data(pair.utf8).base64EncodedString())", forHTTPHeaderField: "Authorization")
            if compatibility.contains(.clientIDInBodyWithBasicAuthentication) {
                parameters.append(("client_id", clientID))
            }
        case .post(let secret):
            parameters.append(("client_id", clientID))
            parameters.append(("client_secret", secret))
        case .none, .mutualTLS:
            // RFC 8705 §2: the certificate of the TLS connection authenticates the client.
            parameters.append(("client_id", clientID))
        case .unidentified:
            break
        case .assertion(let signer):
            guard let endpoint = request.url else { return [] }
            let assertion = try await signer.assertion(clientID: clientID, endpoint: endpoint, issuer: issuer)
            parameters.append(("client_id", clientID))
            parameters.append(("client_assertion_type", ClientAssertion.jwtBearerType))
            parameters.append(("client_assertion", assertion))
            return [assertion]
        }
        return []
    }

    /// `ClientAuthentication(client_secret_basic, clientID: …)`: the secret is never shown.
    public var description: String {
        let secret = secret != nil || { if case .assertion = method { true } else { false } }()
        return "ClientAuthentication(\(methodName), clientID: \(clientID)\(secret ? ", secret: <redacted>" : "")"
            + "\(usesMutualTLS ? ", mutual TLS" : ""))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror without the secret.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
