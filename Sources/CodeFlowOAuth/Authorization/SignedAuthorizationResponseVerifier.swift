import Foundation

/// Verifies JWT-secured authorization responses (JARM, `response_mode=jwt`): the server signs the
/// response's parameters, and nothing in them is used before the verifier has checked the
/// signature with the server's keys, the issuer, the audience and the expiry.
///
/// The `OpenIDConnect` module's `SignedAuthorizationResponseValidator` is one, on the provider's
/// published keys.
public protocol SignedAuthorizationResponseVerifier: Sendable {
    /// The parameters of the signed `response` (`code`, `state`, `iss`, or `error` and its
    /// description), after every check passed.
    ///
    /// - Throws: an error naming the rule that failed; nothing of the response is used then.
    func parameters(ofSignedResponse response: String, clientID: String) async throws -> [String: String]
}
