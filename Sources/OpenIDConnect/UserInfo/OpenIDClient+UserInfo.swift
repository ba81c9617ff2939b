import AuthenticatedRequests
import Foundation
import JWTKit
import OAuthFlows

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// UserInfo (OpenID Connect Core §5.3): plain or signed replies, and the claims they point to
// elsewhere (§5.6.2: aggregated and distributed claims).
extension OpenIDClient {
    /// The most claim sources one UserInfo reply may name that are resolved.
    static var maximumClaimSources: Int { 8 }

    /// The UserInfo claims of the signed-in user (Core §5.3), fetched with the session's access
    /// token (refreshed if needed), with the claims of their aggregated and distributed sources
    /// (Core §5.6.2) in place.
    ///
    /// Rule by rule, in the order of Core §5.3.2 and §5.6.2:
    /// 1. A signed reply (`application/jwt`) is verified with the provider's keys, with an
    ///    algorithm it advertises (`userinfo_signing_alg_values_supported`; never `none` or an
    ///    HMAC); its `iss` must be the provider's issuer, its `aud` name the client, and an `exp`
    ///    it carries must not have passed (one minute of clock skew). An encrypted reply is
    ///    refused (not supported).
    /// 2. The `sub` must be the ID token's.
    /// 3. Each source of `_claim_sources` (at most 8): an aggregated one's `JWT`, or what a
    ///    distributed one's `endpoint` returns (fetched with its `access_token` as a bearer token,
    ///    https or loopback only, no redirect, 1 MiB, the context's deadline), is a JWT verified
    ///    with the keys of a provider the application trusts (``claimsProviders``; the OpenID
    ///    provider itself for a JWT whose `iss` is its issuer), never with keys the JWT points
    ///    to; an `exp` it carries must not have passed. Its `sub`, when present, is the user's
    ///    identifier at the claims provider (§5.6.2), compared only when the provider is the
    ///    OpenID provider itself. The claims that `_claim_names` maps to that source replace the
    ///    pointers; a source that fails keeps its pointers and is named in
    ///    ``UserInfo/failedClaimSources``: the rest of UserInfo is returned.
    ///
    /// - Throws: ``OpenIDConnectError``: ``OpenIDConnectError/Code/userInfoFailed`` (an error
    ///   status, a reply that is neither JSON nor a JWS), ``OpenIDConnectError/Code/untrustedUserInfo``
    ///   (a signature, `iss`, `aud` or `exp` that fails), ``OpenIDConnectError/Code/subjectMismatch``,
    ///   ``OpenIDConnectError/Code/claimSourceFailed`` (`_claim_sources` itself malformed or too
    ///   large).
    public func userInfo(using authenticator: OAuthAuthenticator) async throws -> UserInfo {
        // A client using mutual TLS reaches UserInfo at its alias (RFC 8705 §5), with its bound token.
        let alias = client.usesMutualTLS ? provider.metadata.mtlsEndpointAliases["userinfo_endpoint"] : nil
        guard let endpoint = alias ?? provider.userInfoEndpoint else {
            throw OpenIDConnectError(.missingEndpoint, "The provider has no userinfo_endpoint.")
        }
        guard let subject = try await authenticator.currentCredential()?.idTokenClaims?.subject else {
            throw OpenIDConnectError(.noIDToken, "The session has no ID token to compare UserInfo's sub with.")
        }
        // The client's own context, else the authenticator's: the transport is set once.
        let context = hasOwnContext ? self.context : authenticator.context
        var request = URLRequest(url: endpoint)
        request.setValue("application/json, application/jwt", forHTTPHeaderField: "Accept")
        let (body, response) = try await authenticator.send(request, over: context.transport)
        guard (200..<300).contains(response.statusCode) else {
            throw OpenIDConnectError(.userInfoFailed, "UserInfo answered \(response.statusCode).")
        }
        guard body.count <= 1 << 20 else {
            throw OpenIDConnectError(.userInfoFailed, "The UserInfo response is larger than 1 MiB.")
        }
        let claims: [String: JSONValue]
        if Self.isJWT(response) {
            claims = try await signedUserInfoClaims(String(decoding: body, as: UTF8.self))
        } else {
            guard let object = try? JSONValue(parsing: body).objectValue else {
                throw OpenIDConnectError(.userInfoFailed, "The UserInfo response is not a JSON object.")
            }
            claims = object
        }
        guard let received = claims["sub"]?.stringValue, received == subject else {
            throw OpenIDConnectError(
                .subjectMismatch, "UserInfo's sub is not the ID token's; the response was refused.")
        }
        return try await resolvingClaimSources(of: claims, subject: subject, context: context)
    }

    /// Whether `response` is `application/jwt` (parameters aside).
    static func isJWT(_ response: ResponseHead) -> Bool {
        let type = response.value(forHTTPHeaderField: "Content-Type") ?? ""
        return type.split(separator: ";").first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased() == "application/jwt"
        } ?? false
    }

    /// The claims of a signed UserInfo reply, after Core §5.3.2's checks.
    func signedUserInfoClaims(_ reply: String) async throws -> [String: JSONValue] {
        let jws: CompactJWS
        do {
            jws = try CompactJWS(reply.trimmingCharacters(in: .whitespacesAndNewlines))
        } catch {
            throw OpenIDConnectError(
                .userInfoFailed,
                "The signed UserInfo response is not a JWS in compact form (encrypted ones are not supported).")
        }
        let advertised =
            provider.metadata.fields["userinfo_signing_alg_values_supported"]?.arrayValue?.compactMap(\.stringValue)
            ?? []
        try await verify(jws, with: provider.keys, algorithms: advertised, what: "The signed UserInfo response")
        guard jws.claims["iss"]?.stringValue == provider.issuer else {
            throw OpenIDConnectError(
                .untrustedUserInfo, "The signed UserInfo response's iss is not the provider's issuer.")
        }
        guard Self.audiences(of: jws.claims).contains(client.clientID) else {
            throw OpenIDConnectError(
                .untrustedUserInfo, "The signed UserInfo response's aud does not name this client.")
        }
        if Self.hasExpired(jws.claims, now: context.clock.now) {
            throw OpenIDConnectError(.untrustedUserInfo, "The signed UserInfo response has expired (its exp passed).")
        }
        return jws.claims
    }

    /// Verifies `jws`'s signature with `keys`, with one of `algorithms` (RS256, PS256 and ES256
    /// when none is advertised; never `none` or an HMAC).
    func verify(_ jws: CompactJWS, with keys: JSONWebKeySet, algorithms: [String], what: String) async throws {
        let allowed = (algorithms.isEmpty ? ["RS256", "PS256", "ES256"] : algorithms)
            .filter { $0.lowercased() != "none" && !$0.hasPrefix("HS") }
        guard let algorithm = jws.algorithm, allowed.contains(algorithm) else {
            throw OpenIDConnectError(
                .untrustedUserInfo,
                "\(what) is signed with \(jws.algorithm ?? "no algorithm"); the client accepts "
                    + "\(allowed.joined(separator: ", ")).")
        }
        let verifier: any JWTAlgorithm
        do {
            verifier = try await keys.verifier(keyID: jws.keyID, algorithm: algorithm)
        } catch {
            throw OpenIDConnectError(.untrustedUserInfo, "No key fits \(what.lowercased()): \(error)")
        }
        guard (try? verifier.verify(jws.signature, signs: jws.signingInput)) == true else {
            throw OpenIDConnectError(.untrustedUserInfo, "\(what)'s signature does not verify.")
        }
    }

    static func audiences(of claims: [String: JSONValue]) -> [String] {
        switch claims["aud"] {
        case .string(let audience)?: [audience]
        case .array(let values)?: values.compactMap(\.stringValue)
        default: []
        }
    }

    /// Whether `claims` carry an `exp` that has passed by `now`, with a minute of clock skew. A
    /// non-numeric `exp` counts as passed.
    static func hasExpired(_ claims: [String: JSONValue], now: Date) -> Bool {
        guard let exp = claims["exp"] else { return false }
        guard let seconds = exp.doubleValue, seconds.isFinite else { return true }
        return seconds + 60 <= now.timeIntervalSince1970
    }

    // MARK: Aggregated and distributed claims (Core §5.6.2)

    /// `claims` with the claims of each source that `_claim_names` points to in place and those
    /// pointers removed; a source that fails keeps its pointers and is named with its error.
    func resolvingClaimSources(
        of claims: [String: JSONValue], subject: String, context: AuthenticationContext
    ) async throws -> UserInfo {
        guard let plan = try ClaimSources(userInfo: claims) else {
            return UserInfo(claims: claims, failedClaimSources: [])
        }
        var resolved = claims
        var failures: [ClaimSourceFailure] = []
        var remainingNames = plan.remainingNames
        var remainingSources = plan.remainingSources
        for source in plan.sources {
            do {
                let sourceClaims = try await self.claims(of: source, subject: subject, context: context)
                if let missing = source.claims.first(where: { sourceClaims[$0] == nil }) {
                    throw OpenIDConnectError(
                        .claimSourceFailed, "The claim source '\(source.name)' does not hold the claim '\(missing)'.")
                }
                for claim in source.claims { resolved[claim] = sourceClaims[claim] }
            } catch let error as OpenIDConnectError {
                failures.append(ClaimSourceFailure(source: source.name, claims: source.claims, error: error))
                for claim in source.claims { remainingNames[claim] = .string(source.name) }
                remainingSources[source.name] = source.entry
            }
        }
        resolved["_claim_names"] = remainingNames.isEmpty ? nil : .object(remainingNames)
        resolved["_claim_sources"] = remainingSources.isEmpty ? nil : .object(remainingSources)
        return UserInfo(claims: resolved, failedClaimSources: failures)
    }

    /// The verified claims of one source: its `JWT` (aggregated), or what its `endpoint` returns
    /// (distributed), verified with the keys of the provider the application trusts for it.
    func claims(
        of source: ClaimSources.Source, subject: String, context: AuthenticationContext
    ) async throws -> [String: JSONValue] {
        let token: String
        let endpoint: URL?
        switch source.location {
        case .aggregated(let jwt):
            (token, endpoint) = (jwt, nil)
        case .distributed(let url, let accessToken):
            (token, endpoint) = (try await fetchClaims(from: url, accessToken: accessToken, context: context), url)
        }
        let name = source.name
        let jws: CompactJWS
        do {
            jws = try CompactJWS(token.trimmingCharacters(in: .whitespacesAndNewlines))
        } catch {
            throw OpenIDConnectError(.claimSourceFailed, "The claims of the source '\(name)' are not a signed JWT.")
        }
        let issuer = jws.claims["iss"]?.stringValue
        let what = "The claims of '\(name)'"
        do {
            if let trusted = claimsProviders.first(where: { $0.matches(issuer: issuer, endpoint: endpoint) }) {
                switch trusted.keys {
                case .openIDProvider:
                    try await verify(jws, with: provider.keys, algorithms: trusted.algorithms, what: what)
                case .jwks(let url):
                    guard url.isSafeForSecrets || context.allowsInsecureHTTP else {
                        throw OpenIDConnectError(
                            .claimSourceFailed, "The keys of \(trusted) are not at an https URL; nothing was fetched.")
                    }
                    let keys = JSONWebKeySet(url: url, context: context)
                    try await verify(jws, with: keys, algorithms: trusted.algorithms, what: what)
                }
            } else if let issuer, issuer == provider.issuer {
                try await verify(jws, with: provider.keys, algorithms: [], what: what)
            } else {
                throw OpenIDConnectError(
                    .claimSourceFailed,
                    "\(what) are signed by "
                        + (issuer.map { "'\($0.prefix(200))', a claims provider" } ?? "an unnamed claims provider")
                        + " the application does not trust (OpenIDClient.claimsProviders); they were not verified.")
            }
        } catch let error as OpenIDConnectError where error.code == .untrustedUserInfo {
            throw OpenIDConnectError(.claimSourceFailed, error.message)
        }
        if Self.hasExpired(jws.claims, now: context.clock.now) {
            throw OpenIDConnectError(.claimSourceFailed, "\(what) have expired (their exp passed).")
        }
        // Another provider's `sub` is the user's identifier there (§5.6.2); the OpenID
        // provider's own must be the user's.
        if issuer == provider.issuer, let sourceSubject = jws.claims["sub"]?.stringValue, sourceSubject != subject {
            throw OpenIDConnectError(.claimSourceFailed, "\(what) are about another subject.")
        }
        return jws.claims
    }

    /// What a distributed source's endpoint returns: https (or http to a loopback address), with
    /// its access token as a bearer token, no redirect, 1 MiB and the context's deadline at most.
    func fetchClaims(from endpoint: URL, accessToken: String?, context: AuthenticationContext) async throws -> String {
        guard endpoint.isSafeForSecrets || (context.allowsInsecureHTTP && accessToken == nil) else {
            throw OpenIDConnectError(
                .claimSourceFailed, "The claims endpoint \(endpoint.redactedForDisplay) is not https; nothing was sent."
            )
        }
        var request = URLRequest(url: endpoint)
        request.setValue("application/jwt", forHTTPHeaderField: "Accept")
        if let accessToken { request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization") }
        let body: Data
        let response: ResponseHead
        do {
            (body, response) = try await context.transport.send(request, options: context.authorizationServerOptions)
        } catch {
            throw OpenIDConnectError(
                .claimSourceFailed,
                "The claims endpoint \(endpoint.redactedForDisplay) could not be read: "
                    + Redaction.redact("\(error)", removing: [accessToken].compactMap { $0 }))
        }
        guard (200..<300).contains(response.statusCode) else {
            throw OpenIDConnectError(
                .claimSourceFailed,
                "The claims endpoint \(endpoint.redactedForDisplay) answered \(response.statusCode).")
        }
        return String(decoding: body, as: UTF8.self)
    }
}

/// What UserInfo's `_claim_names` and `_claim_sources` (Core §5.6.2) ask for: the sources to
/// read, each with the claims it holds, checked before anything is fetched. Outside input: bounded
/// (at most ``OpenIDClient/maximumClaimSources`` sources) and fuzzed (`userinfo-claim-sources`).
package struct ClaimSources: Sendable {
    /// Where a source's claims are.
    package enum Location: Sendable {
        /// A JWT inside UserInfo.
        case aggregated(String)
        /// An endpoint, read with its access token if it has one.
        case distributed(URL, accessToken: String?)
    }

    /// One source the claims point to.
    package struct Source: Sendable {
        /// Its name in `_claim_sources`.
        package let name: String
        /// Where its claims are.
        package let location: Location
        /// The claims `_claim_names` maps to it, sorted.
        package let claims: [String]
        /// Its entry in `_claim_sources`, as received.
        package let entry: JSONValue
    }

    /// The sources to read, sorted by name.
    package let sources: [Source]
    /// The entries of `_claim_names` that point to no source read.
    package let remainingNames: [String: JSONValue]
    /// The entries of `_claim_sources` that no claim points to.
    package let remainingSources: [String: JSONValue]

    /// The plan of `userInfo`'s claims, or `nil` when it names no claim source.
    ///
    /// - Throws: ``OpenIDConnectError`` ``OpenIDConnectError/Code/claimSourceFailed`` for more
    ///   sources than are read, a source pointed to that is not described, or one with neither a
    ///   `JWT` nor an `endpoint` URL.
    package init?(userInfo: [String: JSONValue]) throws {
        guard case .object(let names)? = userInfo["_claim_names"],
            case .object(let descriptions)? = userInfo["_claim_sources"]
        else { return nil }
        var claimsBySource: [String: [String]] = [:]
        for (claim, source) in names {
            guard let source = source.stringValue else { continue }
            claimsBySource[source, default: []].append(claim)
        }
        guard claimsBySource.count <= OpenIDClient.maximumClaimSources else {
            throw OpenIDConnectError(
                .claimSourceFailed,
                "UserInfo names \(claimsBySource.count) claim sources; at most \(OpenIDClient.maximumClaimSources) are read."
            )
        }
        var sources: [Source] = []
        for (name, claims) in claimsBySource.sorted(by: { $0.key < $1.key }) {
            guard case .object(let description)? = descriptions[name] else {
                throw OpenIDConnectError(.claimSourceFailed, "The claim source '\(name)' is not described.")
            }
            let location: Location
            if let jwt = description["JWT"]?.stringValue {
                location = .aggregated(jwt)
            } else if let endpoint = description["endpoint"]?.stringValue.flatMap(URL.init(string:)),
                endpoint.scheme != nil, endpoint.host != nil
            {
                location = .distributed(endpoint, accessToken: description["access_token"]?.stringValue)
            } else {
                throw OpenIDConnectError(.claimSourceFailed, "The claim source '\(name)' has neither JWT nor endpoint.")
            }
            sources.append(
                Source(name: name, location: location, claims: claims.sorted(), entry: .object(description)))
        }
        self.sources = sources
        self.remainingNames = names.filter { $0.value.stringValue == nil }
        self.remainingSources = descriptions.filter { claimsBySource[$0.key] == nil }
    }
}
