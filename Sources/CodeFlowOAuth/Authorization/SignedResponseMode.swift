import Foundation

/// How the server returns a signed authorization response (JARM §2.3): the `response_mode` of a
/// request that asks for one.
///
/// The user agent must be able to receive the mode: ``LoopbackUserAgent`` receives the query
/// modes and ``formPostJWT`` (a `POST` it accepts only for a flow that asked for it), not
/// ``fragmentJWT`` (a browser never sends the fragment to a server); an agent that hands back the
/// whole redirect URL (a custom scheme, the web authentication sheet) receives the query and
/// fragment modes, not ``formPostJWT``. A mode the agent cannot receive, or the server does not
/// list in `response_modes_supported`, is refused before anything is sent.
public struct SignedResponseMode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The `response_mode` value, e.g. `query.jwt`.
    public let rawValue: String

    /// Creates a mode from its `response_mode` value.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// `jwt`: the server's default for the code flow, which is ``queryJWT``.
    public static let jwt = SignedResponseMode(rawValue: "jwt")
    /// `query.jwt`: the signed `response` in the redirect's query.
    public static let queryJWT = SignedResponseMode(rawValue: "query.jwt")
    /// `fragment.jwt`: the signed `response` in the redirect's fragment, for user agents that hand
    /// back the whole redirect URL.
    public static let fragmentJWT = SignedResponseMode(rawValue: "fragment.jwt")
    /// `form_post.jwt`: the browser posts the signed `response` to the redirect URI as a form.
    public static let formPostJWT = SignedResponseMode(rawValue: "form_post.jwt")

    /// Whether the response travels in the redirect's fragment.
    var usesFragment: Bool { self == .fragmentJWT }

    /// The `response_mode` value.
    public var description: String { rawValue }
}
