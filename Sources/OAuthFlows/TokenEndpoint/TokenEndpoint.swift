import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An authorization server's token endpoint (RFC 6749 §3.2) and the client that uses it.
///
/// Every grant goes through ``requestToken(grantType:parameters:requestedScope:replacing:context:)``:
/// a form `POST`, one client authentication method, and a parsed `OAuthToken` or a typed error
/// (`OAuthError` for RFC 6749 §5.2 bodies, ``TokenEndpointError`` for anything else).
public struct TokenEndpoint: Sendable {
    /// The endpoint's URL.
    public let url: URL
    /// How the client authenticates.
    public let client: ClientAuthentication
    /// RFC 8707 resource indicators: each is sent as a `resource` parameter of every token
    /// request, naming a resource server the token is meant for. Empty unless given.
    public var resources: [URL]

    /// Creates a token endpoint client.
    ///
    /// - Parameters:
    ///   - url: The endpoint's URL.
    ///   - client: How the client authenticates.
    ///   - resources: RFC 8707 resource indicators: absolute URIs without a fragment.
    public init(url: URL, client: ClientAuthentication, resources: [URL] = []) {
        self.url = url
        self.client = client
        self.resources = resources
    }

    /// The store key for tokens of this client at this endpoint: `<client id>@<token endpoint URL>`.
    public var storeKey: String {
        "\(client.clientID)@\(url.absoluteString)"
    }

    /// The store key for the session of `account` (any name the app gives its user, e.g. the
    /// `sub` or an email) with this client at this endpoint: ``storeKey`` followed by
    /// `#account=<account>`; ``storeKey`` itself when `account` is `nil`. Every flow of a
    /// signed-in user (browser, device, refresh token, ``StoredSessionFlow``) uses this key, so a
    /// session signed in by one comes back through another.
    public func storeKey(account: String?) -> String {
        storeKey + (account.map { "#account=\($0)" } ?? "")
    }

    /// Requests a token with any grant (RFC 6749 §4, §6, and extensions).
    ///
    /// With a `proofOfPossession` in the context (DPoP), the request carries a proof signed with a
    /// new session key, or with `previous`'s key when it is bound; a token of the proof's type
    /// comes back bound to that key (`OAuthToken.boundKey`).
    ///
    /// - Parameters:
    ///   - grantType: `grant_type`.
    ///   - parameters: the grant's parameters, sent in this order after `grant_type`, before the
    ///     ``resources``.
    ///   - requestedScope: the scope asked for; the token's scope when the response omits `scope`.
    ///   - previous: the token this request replaces (a refresh), whose key a proof keeps using.
    ///   - context: transport and clock; expiry is computed from when the request was sent.
    public func requestToken(
        grantType: String,
        parameters: [(String, String)] = [],
        requestedScope: String? = nil,
        replacing previous: OAuthToken? = nil,
        context: AuthenticationContext
    ) async throws -> OAuthToken {
        let resourceParameters = try Self.resourceParameters(resources)
        let proof: (any ProofOfPossession, BoundKey)?
        if let proofOfPossession = context.proofOfPossession {
            proof = (proofOfPossession, try await proofOfPossession.key(for: previous))
        } else {
            proof = nil
        }
        // Read before sending: a certificate rotated meanwhile costs one more refresh, never a
        // token stamped with a certificate it was not issued over.
        let certificate = try context.transport.clientCertificateThumbprint()
        let reply = try await FormPost.send(
            [("grant_type", grantType)] + parameters + resourceParameters,
            to: url,
            client: client,
            context: context,
            proof: proof,
            alsoRemoving: previous?.secretValues ?? []
        )
        var token = try Self.token(from: reply, requestedScope: requestedScope, now: context.clock.now)
        // A server without DPoP answers a proof with a bearer token (RFC 9449 §5): it stays bearer.
        if let (proofOfPossession, key) = proof, token.isBound(by: proofOfPossession) {
            token.boundKey = key
        }
        try Self.bind(&token, toCertificate: certificate, at: url)
        return token
    }

    /// Records the client certificate `token` was issued over (RFC 8705 §3) in
    /// `OAuthToken.certificateThumbprint`, unless DPoP binds it: a token is bound by one or the
    /// other, never both.
    ///
    /// - Throws: `TokenEndpointError` `.invalidResponse` when the token, a JWT the client can
    ///   read, says it is bound to another certificate than the one presented (`cnf.x5t#S256`),
    ///   to a certificate when none was presented, or to a certificate and a DPoP key at once:
    ///   such a token is reported, never sent.
    static func bind(_ token: inout OAuthToken, toCertificate presented: String?, at url: URL) throws {
        let claims = JWTClaimsPeek(token.accessToken)
        let bound = claims?.certificateThumbprint
        if token.boundKey != nil || claims?.isBoundToKey == true {
            guard bound == nil else {
                throw TokenEndpointError(
                    .invalidResponse,
                    "\(url.redactedForDisplay) issued a token bound both to a DPoP key and to a client "
                        + "certificate (cnf.x5t#S256); it is not used.")
            }
            return
        }
        guard let presented else {
            guard bound == nil else {
                throw TokenEndpointError(
                    .invalidResponse,
                    "\(url.redactedForDisplay) issued a token bound to a client certificate (cnf.x5t#S256), but "
                        + "the transport presents none; it is not used. Give the transport the client identity.")
            }
            return
        }
        if let bound, bound != presented {
            throw TokenEndpointError(
                .invalidResponse,
                "\(url.redactedForDisplay) issued a token bound to the client certificate \(bound), not to the one "
                    + "presented (\(presented)); it is not used.")
        }
        token.certificateThumbprint = presented
    }

    /// `resource` parameters (RFC 8707 §2): absolute URIs without a fragment.
    static func resourceParameters(_ resources: [URL]) throws -> [(String, String)] {
        try resources.map { resource in
            guard resource.scheme != nil, resource.fragment == nil, !resource.absoluteString.contains("#") else {
                throw TokenEndpointError(
                    .invalidConfiguration,
                    "The resource indicator \(resource.redactedForDisplay) is not an absolute URI without a "
                        + "fragment (RFC 8707 §2)."
                )
            }
            return ("resource", resource.absoluteString)
        }
    }

    /// Runs the refresh token grant (RFC 6749 §6) for `previous`, keeping its refresh token when
    /// the response has none and its scope when the response omits `scope`.
    public func refresh(
        _ previous: OAuthToken,
        scope: String? = nil,
        additionalParameters: [String: String] = [:],
        context: AuthenticationContext
    ) async throws -> OAuthToken {
        guard let refreshToken = previous.refreshToken else {
            throw AuthenticationError(
                code: .missingCredential,
                message: "The token has no refresh token; the user must sign in again."
            )
        }
        var parameters = [("refresh_token", refreshToken)]
        if let scope { parameters.append(("scope", scope)) }
        parameters += additionalParameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        var token = try await requestToken(
            grantType: "refresh_token",
            parameters: parameters,
            requestedScope: scope ?? previous.scope,
            replacing: previous,
            context: context
        )
        if token.refreshToken == nil { token.refreshToken = refreshToken }
        return token
    }

    /// Parses a token response (RFC 6749 §5.1) or throws its error (§5.2). Expiry counts from
    /// when the request was sent.
    package static func token(from reply: ServerReply, requestedScope: String?, now: Date) throws -> OAuthToken {
        var fields = try FormPost.jsonObject(from: reply, now: now)
        func string(_ name: String) throws -> String? {
            switch fields.removeValue(forKey: name) {
            case nil, .null?: return nil
            case .string(let value)?: return value
            default:
                throw TokenEndpointError(
                    .invalidField, "The token response's \(name) is not a string.", reply: reply, field: name)
            }
        }
        guard let accessToken = try string("access_token"), !accessToken.isEmpty else {
            throw TokenEndpointError(
                .missingField, "The token response has no access_token.", reply: reply, field: "access_token")
        }
        let tokenType = try string("token_type") ?? "Bearer"
        let expiresIn = try ServerNumber.seconds(
            fields.removeValue(forKey: "expires_in"), ServerNumber.tokenLifetime, in: reply)
        let refreshToken = try string("refresh_token")
        let scope = try string("scope") ?? requestedScope
        let idToken = try string("id_token")
        // RFC 9396 §7: what was granted; kept in additionalFields, so it is checked here once.
        if let details = fields["authorization_details"] {
            do {
                _ = try AuthorizationDetail.list(from: details)
            } catch {
                throw TokenEndpointError(
                    .invalidField, "The token response's authorization_details is malformed: \(error).", reply: reply,
                    field: "authorization_details")
            }
        }
        return OAuthToken(
            accessToken: accessToken,
            tokenType: tokenType,
            expiresAt: expiresIn.map { reply.sentAt.addingTimeInterval($0) },
            refreshToken: refreshToken,
            scope: scope,
            idToken: idToken,
            additionalFields: fields,
            issuedAt: reply.sentAt
        )
    }
}
