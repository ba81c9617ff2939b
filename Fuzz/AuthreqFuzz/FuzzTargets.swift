import AuthenticatedRequests
import AuthreqCLI
import CodeFlowOAuth
import DPoP
import Foundation
import OAuthFlows
import OpenIDConnect
import ResourceDiscovery

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One fuzz target per parser of outside input. Each takes arbitrary bytes, runs the parser, and
/// checks what must hold of any result; a crash, a trap or a failed check is a finding.
enum FuzzTargets {
    static let all: [String: @Sendable (Data) -> Void] = [
        "json": json,
        "token-reply": tokenReply,
        "error-reply": errorReply,
        "device-reply": deviceReply,
        "discovery": discovery,
        "resource-metadata": resourceMetadata,
        "www-authenticate": wwwAuthenticate,
        "redirect-url": redirectURL,
        "store-entry": storeEntry,
        "retry-after": retryAfter,
        "introspection-reply": introspectionReply,
        "cli-config": cliConfiguration,
        "id-token": idToken,
        "jwks": jwks,
        "par-reply": pushedAuthorizationReply,
        "dpop-challenge": dpopChallenge,
        "registration-reply": registrationReply,
        "authorization-details": authorizationDetails,
        "signed-authorization-response": signedAuthorizationResponse,
        "userinfo-claim-sources": userInfoClaimSources,
        "backchannel-reply": backchannelReply,
        "backchannel-notification": backchannelNotification,
        "pem": pem,
    ]

    static let tokenURL = URL(string: "https://auth.example.com/token")!
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fatalError("fuzz check failed: \(message())") }
    }

    /// A reply with `status` and the given body.
    static func reply(status: Int, body: Data, headers: [String: String] = [:]) -> ServerReply {
        let response = ResponseHead(statusCode: status, url: tokenURL, headerFields: HeaderFields(headers))
        return ServerReply(
            url: tokenURL,
            body: body,
            response: response,
            sentSecrets: ["client-secret-value", "refresh-token-value"],
            sentAt: now
        )
    }

    /// The strict parser: whatever it accepts re-encodes and parses to the same value.
    static func json(_ data: Data) {
        guard let value = try? JSONValue(parsing: data) else { return }
        guard let encoded = try? JSONEncoder().encode(value) else {
            fatalError("a parsed value could not be encoded")
        }
        check((try? JSONValue(parsing: encoded, maximumDepth: 64)) == value, "round trip changed the value")
    }

    /// A token response (RFC 6749 §5.1) with a status from the first byte.
    static func tokenReply(_ data: Data) {
        let statuses = [200, 200, 201, 400, 401, 429, 500, 503]
        let status = statuses[Int(data.first ?? 0) % statuses.count]
        do {
            let token = try TokenEndpoint.token(
                from: reply(status: status, body: data.dropFirst()), requestedScope: nil, now: now)
            check(!token.accessToken.isEmpty, "an empty access token was accepted")
            if let expiresAt = token.expiresAt {
                check(expiresAt.timeIntervalSince1970.isFinite, "a non-finite expiry")
                check(expiresAt >= now, "an expiry before the request")
            }
            _ = token.description
            let stored = try JSONEncoder().encode(token)
            check(try JSONDecoder().decode(OAuthToken.self, from: stored) == token, "a token did not survive its store")
        } catch let error as OAuthError {
            check(!error.description.contains("refresh-token-value"), "a sent secret leaked")
        } catch {
            check(!"\(error)".contains("client-secret-value"), "a sent secret leaked")
        }
    }

    /// RFC 9396 `authorization_details`: whatever parses re-encodes as the parameter and parses to
    /// the same entries, and a token keeps it through its store.
    static func authorizationDetails(_ data: Data) {
        guard let json = try? JSONValue(parsing: data) else { return }
        guard let details = try? AuthorizationDetail.list(from: json) else { return }
        check(details.allSatisfy { !$0.type.isEmpty }, "an entry without a type was accepted")
        do {
            let parameter = try AuthorizationDetail.parameter(details)
            let again = try AuthorizationDetail.list(from: try JSONValue(parsing: Data(parameter.utf8)))
            check(again == details, "authorization_details did not survive its parameter")
            let token = OAuthToken(accessToken: "at", additionalFields: ["authorization_details": json])
            let stored = try JSONDecoder().decode(OAuthToken.self, from: try JSONEncoder().encode(token))
            check(stored.authorizationDetails == details, "authorization_details did not survive the store")
        } catch {
            check(false, "accepted authorization_details failed to re-encode: \(error)")
        }
    }

    /// A JARM redirect (`response=<JWT>`): the unverified `state` that routes it to its flow is the
    /// `state` claim of a three-part token whose payload is a JSON object, and the parameters taken
    /// from verified claims are their strings, `aud` never among them.
    static func signedAuthorizationResponse(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        guard var components = URLComponents(string: "http://127.0.0.1/callback") else { return }
        components.queryItems = [URLQueryItem(name: "response", value: text)]
        guard let url = components.url else { return }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let claims =
            parts.count == 3 ? Base64URL.decode(parts[1]).flatMap { try? JSONValue(parsing: $0).objectValue } : nil
        if let state = RedirectState.state(of: url) {
            check(claims?["state"]?.stringValue == state, "a state that is not the token's state claim")
        }
        guard let claims else { return }
        let parameters = SignedAuthorizationResponseValidator.parameters(of: claims)
        check(parameters["aud"] == nil, "aud taken as a parameter")
        for (name, value) in parameters { check(claims[name]?.stringValue == value, "a parameter not from its claim") }
    }

    /// An error response (RFC 6749 §5.2), with `Retry-After` from the first bytes.
    static func errorReply(_ data: Data) {
        let split = min(Int(data.first ?? 0) % 40, data.count)
        let header = String(decoding: data.prefix(split), as: UTF8.self)
        let body = data.dropFirst(split)
        do {
            _ = try FormPost.jsonObject(
                from: reply(status: 400, body: body, headers: ["Retry-After": header]), now: now)
        } catch let error as OAuthError {
            _ = error.description
            check(!error.description.contains("client-secret-value"), "a sent secret leaked")
        } catch {
            _ = "\(error)"
        }
    }

    /// A device authorization response (RFC 8628 §3.2).
    static func deviceReply(_ data: Data) {
        guard
            let authorization = try? DeviceAuthorizationFlow.authorization(
                from: reply(status: 200, body: data), now: now)
        else { return }
        check(authorization.interval.isFinite && authorization.interval >= 1, "an unusable interval")
        check(authorization.interval <= 86_400, "an interval beyond a day")
        check(authorization.expiresAt > now, "codes that expired when issued")
        check(authorization.expiresAt.timeIntervalSince(now) <= 86_400, "codes that live beyond a day")
        _ = authorization.description
    }

    /// A CIBA backchannel authentication response (CIBA Core §7.3): what is accepted has a
    /// bounded identifier, interval and lifetime, and its description never shows the identifier.
    static func backchannelReply(_ data: Data) {
        let sent = reply(status: 200, body: data)
        guard let authentication = try? BackchannelAuthenticationFlow.authentication(from: sent, bindingMessage: "m")
        else { return }
        check(
            !authentication.authRequestID.isEmpty && authentication.authRequestID.utf8.count <= 1024, "an unusable id")
        check(authentication.interval.isFinite && authentication.interval >= 1, "an unusable interval")
        check(authentication.interval <= 86_400, "an interval beyond a day")
        check(authentication.expiresAt > sent.sentAt, "a request that expired when acknowledged")
        check(authentication.expiresAt.timeIntervalSince(sent.sentAt) <= 86_400, "a request that lives beyond a day")
        check(
            authentication.description.hasSuffix("authRequestID: \(Redaction.placeholder))"),
            "the id not redacted in a description")
    }

    /// A CIBA ping notification (CIBA Core §10.2): the first 16 bytes are the bearer the request
    /// expects, the rest the body; only that bearer with the pending `auth_req_id` is accepted.
    static func backchannelNotification(_ data: Data) {
        let expected = String(decoding: data.prefix(16), as: UTF8.self)
        let body = data.dropFirst(16)
        let pendingID = "req-1"
        let outcome = BackchannelNotifications.decide(
            authorization: "Bearer \(expected)", body: Data(body), expecting: [pendingID: "the-right-bearer"])
        check([204, 400, 401].contains(outcome.statusCode), "an unexpected status")
        if outcome.isAccepted {
            check(expected == "the-right-bearer", "accepted with another bearer")
        }
    }

    /// Authorization server metadata (RFC 8414), and its mutual-TLS aliases (RFC 8705 §5): an
    /// alias never replaces the issuer.
    static func discovery(_ data: Data) {
        guard case .object(let fields)? = try? JSONValue(parsing: data),
            let metadata = try? AuthorizationServerMetadata(fields: fields)
        else { return }
        _ = try? metadata.clientCredentialsFlow(client: .none(id: "fuzz"))
        _ = metadata.codeChallengeMethodsSupported
        let resolved = metadata.resolved(for: .tlsClientAuth(id: "fuzz"))
        check(resolved.issuer == metadata.issuer, "an alias replaced the issuer")
        _ = try? resolved.tokenEndpoint(client: .tlsClientAuth(id: "fuzz"))
        _ = metadata.mtlsEndpointAliases
    }

    /// PEM text as a client identity's files hold it (RFC 7468): blocks decode to bytes, and the
    /// key never shows in a description or an error.
    static func pem(_ data: Data) {
        if let blocks = try? PEMDocument.blocks(in: data) {
            check(blocks.allSatisfy { !$0.der.isEmpty && !$0.label.isEmpty }, "an empty block was accepted")
        }
        let text = String(decoding: data, as: UTF8.self)
        let marker = "-----BEGIN PRIVATE KEY-----\nZnV6ei1rZXktbWF0ZXJpYWw=\n-----END PRIVATE KEY-----\n"
        do {
            let identity = try ClientIdentity(certificateChainPEM: text, privateKeyPEM: marker)
            check(!String(describing: identity).contains("ZnV6ei1rZXk"), "the key in a description")
            check(try identity.currentPEM()?.certificates.isEmpty == false, "an identity without a certificate")
        } catch {
            check(!String(describing: error).contains("ZnV6ei1rZXk"), "the key in an error")
        }
    }

    /// A protected resource's metadata (RFC 9728), and its round trip through `Codable`.
    /// An RFC 7591 registration reply: whatever is accepted keeps its secrets out of its
    /// description and reads back the same from storage.
    static func registrationReply(_ data: Data) {
        guard case .object(let fields)? = try? JSONValue(parsing: data) else { return }
        let requested = ClientMetadata(redirectURIs: [URL(string: "http://127.0.0.1/callback")!])
        guard
            let client = try? RegisteredClient(fields: fields, issuer: "https://auth.example.com", requested: requested)
        else { return }
        check(!client.clientID.isEmpty, "a registration without a client id was accepted")
        check(client.redirectURIs.map(\.absoluteString) == ["http://127.0.0.1/callback"], "other redirect URIs")
        for secret in client.secretValues where secret.count >= 8 {
            check(!client.description.contains(secret), "a secret is in the description")
        }
        let stored = try? JSONEncoder().encode(client)
        let restored = stored.flatMap { try? JSONDecoder().decode(RegisteredClient.self, from: $0) }
        check(restored?.clientID == client.clientID, "the registration does not round-trip")
        check(restored?.clientAuthentication.methodName == client.clientAuthentication.methodName, "method changed")
    }

    static func resourceMetadata(_ data: Data) {
        guard case .object(let fields)? = try? JSONValue(parsing: data),
            let metadata = try? ProtectedResourceMetadata(fields: fields)
        else { return }
        check(metadata.resource.fragment == nil, "a resource with a fragment was accepted")
        let encoded = try? JSONEncoder().encode(metadata)
        let decoded = encoded.flatMap { try? JSONDecoder().decode(ProtectedResourceMetadata.self, from: $0) }
        check(decoded?.authorizationServers == metadata.authorizationServers, "the metadata does not round-trip")
        _ = ProtectedResourceMetadata.wellKnownURLs(for: metadata.resource)
        for issuer in metadata.authorizationServers.prefix(4) {
            _ = URL(string: issuer).map(AuthorizationServerMetadata.metadataURLs(forIssuer:))
        }
    }

    /// A `WWW-Authenticate` header.
    static func wwwAuthenticate(_ data: Data) {
        let challenges = AuthenticationChallenge.parse(String(decoding: data, as: UTF8.self))
        check(challenges.count <= data.count, "more challenges than bytes")
        for challenge in challenges {
            _ = challenge.hasScheme("Bearer")
            // The step-up a challenge asks for, authorization details (a JSON array) included.
            if let requirement = StepUpRequirement(challenge: challenge) {
                check(requirement.authorizationDetails.allSatisfy { !$0.type.isEmpty }, "a detail without a type")
                _ = requirement.description
            }
        }
    }

    static let authorizationRequest: AuthorizationRequest? = {
        let configuration = AuthenticationConfiguration(
            authorizationEndpoint: URL(string: "https://auth.example.com/authorize")!,
            tokenEndpoint: tokenURL,
            client: .none(id: "fuzz"),
            redirectURI: URL(string: "http://127.0.0.1:1234/callback")!
        )
        return try? AuthorizationRequest(configuration: configuration, redirectURI: configuration.redirectURI)
    }()

    /// A redirect URL arriving at the loopback receiver or a custom scheme.
    static func redirectURL(_ data: Data) {
        guard let request = authorizationRequest, let url = URL(string: String(decoding: data, as: UTF8.self)) else {
            return
        }
        _ = RedirectState.state(of: url)
        _ = RedirectState.fragmentParameter("response", of: url)
        // The same bytes as a form posted to the loopback receiver (form_post.jwt), which routes
        // it as the query of its redirect URI.
        if let posted = URL(string: "http://127.0.0.1/callback?\(String(decoding: data, as: UTF8.self))") {
            _ = RedirectState.state(of: posted)
        }
        if let response = try? AuthorizationResponse(
            redirect: url, request: request, issuer: "https://a", requiresIssuer: false)
        {
            check(!response.code.isEmpty, "an empty code was accepted")
            check(RedirectState.state(of: url) == request.state, "a response without the request's state")
        }
        // A redirect URI a web authentication session accepts is one it returns to.
        if let callback = try? WebAuthenticationCallback(redirectURI: url) {
            check(callback.accepts(url), "a callback refused its own redirect URI")
            check(url.scheme?.lowercased() != "http", "a web authentication session accepted plain http")
        }
    }

    /// A token store entry.
    static func storeEntry(_ data: Data) {
        guard let token = try? JSONDecoder().decode(OAuthToken.self, from: data) else { return }
        _ = token.description
        var dumped = ""
        dump(token, to: &dumped)
        _ = token.requiresRefresh(now: now, leeway: 60)
        check((try? JSONEncoder().encode(token)) != nil, "a loaded token could not be saved again")
    }

    /// An introspection response (RFC 7662 §2.2).
    static func introspectionReply(_ data: Data) {
        guard let info = try? TokenIntrospection(reply: reply(status: 200, body: data), now: now) else { return }
        for date in [info.expiresAt, info.issuedAt, info.notBefore].compactMap({ $0 }) {
            check(date.timeIntervalSince1970.isFinite && date.timeIntervalSince1970 >= 0, "an unusable date")
            _ = date.description
        }
    }

    /// A `Retry-After` header.
    static func retryAfter(_ data: Data) {
        guard let date = RetryAfter.date(fromHeader: String(decoding: data, as: UTF8.self), now: now) else { return }
        let delay = date.timeIntervalSince(now)
        check(delay >= 0 && delay <= RetryAfter.maximumDelay, "a delay outside the clamp: \(delay)")
    }

    /// `authreq`'s configuration file and endpoint cache: what parses writes back and parses to
    /// the same value; every profile it accepts is checked before use, and any refusal is a
    /// one-line usage error.
    static func cliConfiguration(_ data: Data) {
        do {
            let file = try ConfigurationFile(parsing: data)
            guard let written = try? file.serialized() else {
                fatalError("a parsed configuration could not be written")
            }
            check((try? ConfigurationFile(parsing: written)) == file, "the configuration changed in a round trip")
            for (name, profile) in file.profiles {
                check(Profile.isValidName(name), "an invalid profile name was accepted")
                do {
                    try profile.validate(name: name)
                    for url in [profile.issuer, profile.tokenEndpoint, profile.authorizationEndpoint].compactMap({ $0 })
                    {
                        check(url.isSafeForSecrets, "a profile with a plain-http remote URL passed validation")
                    }
                } catch {
                    check(error.status == ExitStatus.usage, "a profile was refused with another status")
                }
            }
        } catch {
            check(error.status == ExitStatus.usage, "a configuration was refused with another status")
        }
        if let endpoints = ServerEndpoints(cached: data) {
            check(endpoints.token.isSafeForSecrets, "a cached plain-http token endpoint was accepted")
            check(
                (try? endpoints.cached()).flatMap(ServerEndpoints.init(cached:)) == endpoints,
                "the endpoint cache changed in a round trip")
        }
    }

    /// An ID token as a provider sends it: split and decoded without a key; whatever is read
    /// has the registered claims with their types, and its description shows no other claim.
    static func idToken(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        guard let claims = try? IDTokenClaims(storedIDToken: text) else { return }
        check(!claims.subject.isEmpty, "an empty sub was accepted")
        check(!claims.audiences.isEmpty, "an empty aud was accepted")
        check(claims.expiresAt.timeIntervalSince1970.isFinite, "a non-finite exp")
        check(!claims.description.contains(text) || text.count < 8, "the description shows the token")
    }

    /// A UserInfo reply's `_claim_names` and `_claim_sources` (Core §5.6.2): at most 8 sources are
    /// read, each holds exactly the claims that point to it, and what is left aside is what no
    /// claim points to.
    static func userInfoClaimSources(_ data: Data) {
        guard let object = try? JSONValue(parsing: data).objectValue,
            let plan = try? ClaimSources(userInfo: object)
        else { return }
        let names = object["_claim_names"]?.objectValue ?? [:]
        check(plan.sources.count <= 8, "more claim sources than are read")
        check(Set(plan.sources.map(\.name)).count == plan.sources.count, "a source read twice")
        for source in plan.sources {
            check(object["_claim_sources"]?.objectValue?[source.name] != nil, "a source that is not described")
            check(plan.remainingSources[source.name] == nil, "a source both read and left aside")
            for claim in source.claims { check(names[claim]?.stringValue == source.name, "a claim of another source") }
        }
        let read = Set(plan.sources.flatMap(\.claims))
        for (claim, pointer) in names where pointer.stringValue != nil {
            check(read.contains(claim), "a claim pointing to a source that was not read")
        }
    }

    /// A JWKS document: every key read has a type.
    static func jwks(_ data: Data) {
        guard let object = try? JSONValue(parsing: data).objectValue,
            let keys = try? JSONWebKeySet.keys(in: object)
        else { return }
        check(keys.count <= (object["keys"]?.arrayValue?.count ?? 0), "more keys than entries")
        let types = Set(object["keys"]?.arrayValue?.compactMap { $0.objectValue?["kty"]?.stringValue } ?? [])
        for key in keys { check(types.contains(key.type), "a key of a type no entry names") }
    }

    /// A pushed authorization response (RFC 9126 §2.2) with a status from the first byte: what
    /// is accepted has a short printable `request_uri` and a finite, positive lifetime.
    static func pushedAuthorizationReply(_ data: Data) {
        let statuses = [200, 201, 201, 400, 401, 500]
        let status = statuses[Int(data.first ?? 0) % statuses.count]
        do {
            let response = try PushedAuthorizationEndpoint.response(
                from: reply(status: status, body: data.dropFirst()), now: now)
            check(!response.requestURI.isEmpty && response.requestURI.utf8.count <= 2048, "an unusable request_uri")
            check(
                response.requestURI.unicodeScalars.allSatisfy { (0x21...0x7E).contains($0.value) },
                "a request_uri with spaces or controls")
            check(response.expiresIn.isFinite && response.expiresIn > 0, "a lifetime that is no lifetime")
            check(response.expiresAt > now, "an expiry before the request")
        } catch let error as OAuthError {
            check(!error.description.contains("client-secret-value"), "a sent secret leaked")
        } catch {}
    }

    /// What a DPoP resource answers a proved request: the first line is its `DPoP-Nonce`, the
    /// rest its `WWW-Authenticate`. A nonce is remembered only when it is `1*NQCHAR`, and a
    /// challenge is never both resent for a nonce and refreshed for.
    static func dpopChallenge(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        let nonce = String(lines.first ?? "")
        let challenge = lines.count > 1 ? String(lines[1]) : ""
        let apiURL = URL(string: "https://api.example.com/me")!
        let response = ResponseHead(
            statusCode: 401, url: apiURL, headerFields: [("WWW-Authenticate", challenge), ("DPoP-Nonce", nonce)])
        let authenticator = BearerTokenAuthenticator(
            flow: ClientCredentialsFlow(tokenEndpoint: tokenURL, client: .none(id: "app")),
            proofOfPossession: DPoPProver())
        var request = URLRequest(url: apiURL)
        request.setValue("proof", forHTTPHeaderField: "DPoP")
        let resends = authenticator.shouldResend(request, after: response)
        let refreshes = authenticator.didRequest(
            request, with: response, failDueToAuthenticationError: URLError(.userAuthenticationRequired))
        check(!(resends && refreshes), "a challenge was both resent and refreshed for")
        let received = response.value(forHTTPHeaderField: "DPoP-Nonce") ?? ""
        if resends {
            check(
                !received.isEmpty && received.count <= 1024
                    && received.unicodeScalars.allSatisfy {
                        $0.value == 0x21 || (0x23...0x5B).contains($0.value) || (0x5D...0x7E).contains($0.value)
                    },
                "resent with a nonce outside 1*NQCHAR")
        }
    }
}
