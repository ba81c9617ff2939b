import OAuthFlows

/// How an authorization code flow protects its code: with PKCE (the default everywhere) or without.
public protocol CodeFlowConfiguration: Sendable {
    /// A fresh PKCE pair for one authorization attempt, or `nil` for a flow without PKCE.
    func makePKCE() throws -> PKCE?
}

/// The authorization code flow with PKCE (RFC 7636): `S256` unless `plain` is asked for.
/// Use it for every client, confidential or public (RFC 9700 §2.1.1).
public struct PKCECodeFlowConfiguration: CodeFlowConfiguration {
    /// `code_challenge_method`.
    public var method: PKCE.Method
    /// The verifier's length, 43...128.
    public var verifierLength: Int

    /// Creates the configuration.
    public init(method: PKCE.Method = .s256, verifierLength: Int = 64) {
        self.method = method
        self.verifierLength = verifierLength
    }

    /// A new verifier and challenge.
    public func makePKCE() throws -> PKCE? {
        try PKCE(length: verifierLength, method: method)
    }
}

/// The authorization code flow without PKCE, for the rare server that rejects it. Prefer
/// ``PKCECodeFlowConfiguration``.
public struct BasicCodeFlowConfiguration: CodeFlowConfiguration {
    /// Creates the configuration.
    public init() {}

    /// `nil`: no PKCE.
    public func makePKCE() throws -> PKCE? { nil }
}
