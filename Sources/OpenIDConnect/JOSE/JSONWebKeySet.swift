import AuthenticatedRequests
import Foundation
import JWTKit
import OAuthFlows

/// A provider's signing keys (its `jwks_uri`), fetched on first use, cached, and fetched once
/// more when a token names a key the cache does not have (the provider rotated its keys), but
/// never more often than ``minimumRefetchInterval``: a stream of tokens with made-up `kid`s
/// cannot make the client hammer the provider.
public actor JSONWebKeySet {
    /// The `jwks_uri`.
    public nonisolated let url: URL
    /// The least time between two fetches of the set, in seconds (60 by default).
    public nonisolated let minimumRefetchInterval: TimeInterval
    private let context: AuthenticationContext
    private var keys: [Key]?
    private var fetchedAt: Date?
    private var fetching: Task<[Key], any Error>?
    private var algorithms: [String: any JWTAlgorithm] = [:]
    /// How many times the set was fetched (for tests and diagnostics).
    public private(set) var fetchCount = 0

    /// One key with the members that select it.
    package struct Key: Sendable {
        package let id: String?
        package let type: String
        let algorithm: String?
        let use: String?
        let curve: String?
        /// The key object's JSON.
        let json: Data
    }

    /// Creates the cache for `url`.
    public init(url: URL, minimumRefetchInterval: TimeInterval = 60, context: AuthenticationContext) {
        self.url = url
        self.minimumRefetchInterval = minimumRefetchInterval
        self.context = context
    }

    /// The verifier of `alg` for the key the token's header names.
    ///
    /// - Throws: ``IDTokenValidationError/Rule/unknownKey`` when no key fits, also after the
    ///   one re-fetch allowed now.
    func verifier(keyID: String?, algorithm: String) async throws -> any JWTAlgorithm {
        if keys == nil {
            // A set that failed to load is tried again after the same interval, not per token.
            if let fetchedAt, context.clock.now.timeIntervalSince(fetchedAt) < minimumRefetchInterval {
                throw IDTokenValidationError(
                    .unknownKey,
                    "The keys of \(url.redactedForDisplay) could not be fetched; they are tried again "
                        + "at most every \(Int(minimumRefetchInterval)) s.")
            }
            try await refresh()
        }
        if let verifier = try await select(keyID: keyID, algorithm: algorithm) { return verifier }
        let now = context.clock.now
        if let fetchedAt, now.timeIntervalSince(fetchedAt) >= minimumRefetchInterval {
            try await refresh()
            if let verifier = try await select(keyID: keyID, algorithm: algorithm) { return verifier }
        }
        throw IDTokenValidationError(
            .unknownKey,
            "No key of \(url.redactedForDisplay) fits the token (kid \(keyID.map { "'\($0)'" } ?? "absent"), alg "
                + "\(algorithm)); the set is fetched again at most every \(Int(minimumRefetchInterval)) s.")
    }

    /// Fetches the set now (one fetch for concurrent callers).
    private func refresh() async throws {
        if let fetching {
            _ = try await fetching.value
            return
        }
        let (url, context) = (self.url, self.context)
        let task = Task { try await Self.fetch(url, context: context) }
        fetching = task
        defer { fetching = nil }
        fetchedAt = context.clock.now
        fetchCount += 1
        let fetched = try await task.value
        keys = fetched
        algorithms = [:]
    }

    private static func fetch(_ url: URL, context: AuthenticationContext) async throws -> [Key] {
        let reply = try await FormPost.get(url, context: context)
        let object = try FormPost.jsonObject(from: reply, now: context.clock.now)
        return try keys(in: object)
    }

    /// The keys of a JWKS document; keys of unknown types are skipped.
    package static func keys(in object: [String: JSONValue]) throws -> [Key] {
        guard case .array(let entries)? = object["keys"] else {
            throw IDTokenValidationError(.unknownKey, "The JWKS document has no \"keys\" array.")
        }
        return entries.compactMap { entry -> Key? in
            guard let members = entry.objectValue, let type = members["kty"]?.stringValue,
                let json = try? JSONEncoder().encode(entry)
            else { return nil }
            return Key(
                id: members["kid"]?.stringValue, type: type, algorithm: members["alg"]?.stringValue,
                use: members["use"]?.stringValue, curve: members["crv"]?.stringValue, json: json)
        }
    }

    /// The verifier of the one key that fits, or `nil` when none does.
    private func select(keyID: String?, algorithm: String) async throws -> (any JWTAlgorithm)? {
        guard let keys else { return nil }
        let fitting = keys.enumerated().filter { _, key in
            (keyID == nil || key.id == keyID) && (key.use == nil || key.use == "sig")
                && (key.algorithm == nil || key.algorithm == algorithm)
                && Self.type(of: algorithm).map {
                    $0 == (key.type, key.curve ?? "") || ($0.0 == key.type && $0.1.isEmpty)
                }
                    ?? false
        }
        // Without a kid the key must be unambiguous (OpenID Connect Core §10.1).
        guard let (index, key) = fitting.first, keyID != nil || fitting.count == 1 else { return nil }
        let cacheKey = "\(index)|\(algorithm)"
        if let cached = algorithms[cacheKey] { return cached }
        var jwk = try JSONDecoder().decode(JWK.self, from: key.json)
        jwk.algorithm = JWK.Algorithm(rawValue: algorithm)
        let kid = JWKIdentifier(string: key.id ?? "key-\(index)")
        jwk.keyIdentifier = kid
        let collection = JWTKeyCollection()
        try await collection.add(jwk: jwk, isDefault: true)
        let verifier = try await collection.getKey(for: kid, alg: algorithm)
        algorithms[cacheKey] = verifier
        return verifier
    }

    /// The key type (and curve) an algorithm needs; an empty curve for RSA.
    static func type(of algorithm: String) -> (String, String)? {
        switch algorithm {
        case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512": ("RSA", "")
        case "ES256": ("EC", "P-256")
        case "ES384": ("EC", "P-384")
        case "ES512": ("EC", "P-521")
        case "EdDSA": ("OKP", "Ed25519")
        default: nil
        }
    }
}
