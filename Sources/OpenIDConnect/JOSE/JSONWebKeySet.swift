import AuthenticatedRequests
import Foundation
import JWTKit
import OAuthFlows

/// A provider's signing keys (its `jwks_uri`), fetched on first use, cached, and fetched once
/// more when a token names a key the cache does not have (the provider rotated its keys).
///
/// A key not seen before costs one re-fetch at once, however recently the set was fetched, so a
/// provider that rotates a few seconds after the last fetch never fails a sign-in or a refresh.
/// Such re-fetches happen at most once per ``minimumRefetchInterval``: a stream of tokens with
/// made-up `kid`s makes no more than one fetch per interval.
///
/// Every key is checked before use, and every failure is an ``IDTokenValidationError``: two
/// fitting keys under one `kid` (``IDTokenValidationError/Rule/ambiguousKey``), a malformed key,
/// a point of the wrong size or off its curve, an RSA key shorter than 2,048 bits
/// (``IDTokenValidationError/Rule/invalidKey``).
public actor JSONWebKeySet {
    /// The `jwks_uri`.
    public nonisolated let url: URL
    /// The least time between two fetches of the set, in seconds (60 by default).
    public nonisolated let minimumRefetchInterval: TimeInterval
    private let context: AuthenticationContext
    private var keys: [Key]?
    private var fetchedAt: Date?
    /// When a token's unknown `kid` last made the set be fetched: the one such fetch allowed per
    /// interval, whenever the set was fetched for another reason.
    private var unknownKeyFetchAt: Date?
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
        if unknownKeyFetchAt.map({ now.timeIntervalSince($0) >= minimumRefetchInterval }) ?? true {
            unknownKeyFetchAt = now
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
        guard let (index, key) = fitting.first else { return nil }
        // Without a kid the key must be unambiguous (OpenID Connect Core §10.1); with one, a set
        // that names it twice is ambiguous as well: refused, not verified with the first.
        guard fitting.count == 1 else {
            if keyID == nil { return nil }
            throw IDTokenValidationError(
                .ambiguousKey,
                "\(fitting.count) keys of \(url.redactedForDisplay) carry kid '\(keyID ?? "")' for \(algorithm); "
                    + "the token is refused rather than verified with one of them.")
        }
        let cacheKey = "\(index)|\(algorithm)"
        if let cached = algorithms[cacheKey] { return cached }
        let verifier = try await Self.verifier(of: key, index: index, algorithm: algorithm, from: url)
        algorithms[cacheKey] = verifier
        return verifier
    }

    /// The smallest RSA modulus accepted, in bits (NIST SP 800-131A; RFC 7518 §3.3 requires
    /// 2,048 for RS256).
    package static let minimumRSAModulusBits = 2048

    /// The verifier of `key`, after the package's own checks of its size and shape; every failure
    /// of the crypto library is an ``IDTokenValidationError/Rule/invalidKey`` too.
    private static func verifier(of key: Key, index: Int, algorithm: String, from url: URL) async throws
        -> any JWTAlgorithm
    {
        let place = "key \(key.id.map { "'\($0)'" } ?? "#\(index)") of \(url.redactedForDisplay)"
        let members = (try? JSONValue(parsing: key.json).objectValue) ?? [:]
        func bytes(_ name: String) -> Data? { members[name]?.stringValue.flatMap { Base64URL.decode(Substring($0)) } }
        switch key.type {
        case "RSA":
            guard let modulus = bytes("n"), bytes("e") != nil else {
                throw IDTokenValidationError(.invalidKey, "The \(place) has no RSA modulus or exponent.")
            }
            let significant = modulus.drop { $0 == 0 }
            let bits = significant.first.map { significant.count * 8 - $0.leadingZeroBitCount } ?? 0
            guard bits >= minimumRSAModulusBits else {
                throw IDTokenValidationError(
                    .invalidKey,
                    "The \(place) is a \(bits)-bit RSA key; at least \(minimumRSAModulusBits) bits are required.")
            }
        case "EC":
            let size = ["P-256": 32, "P-384": 48, "P-521": 66][key.curve ?? ""]
            guard let size, bytes("x")?.count == size, bytes("y")?.count == size else {
                throw IDTokenValidationError(
                    .invalidKey,
                    "The \(place) is not a point of \(key.curve ?? "a known curve") (coordinates of the wrong size).")
            }
        default:
            break
        }
        do {
            var jwk = try JSONDecoder().decode(JWK.self, from: key.json)
            jwk.algorithm = JWK.Algorithm(rawValue: algorithm)
            let kid = JWKIdentifier(string: key.id ?? "key-\(index)")
            jwk.keyIdentifier = kid
            let collection = JWTKeyCollection()
            try await collection.add(jwk: jwk, isDefault: true)
            return try await collection.getKey(for: kid, alg: algorithm)
        } catch {
            throw IDTokenValidationError(
                .invalidKey,
                "The \(place) cannot be used for \(algorithm): \(Swift.type(of: error)) (e.g. a point off its curve).")
        }
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
