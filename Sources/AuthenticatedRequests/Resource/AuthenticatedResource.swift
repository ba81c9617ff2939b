import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``Resource`` that needs a credential: its requests go through its ``authenticator``.
///
/// ```swift
/// struct Me: AuthenticatedResource {
///     typealias Output = User
///     let authenticator: any RequestAuthenticator
///
///     func urlRequest(using input: Void) throws -> URLRequest {
///         URLRequest(url: URL(string: "https://api.example.com/me")!)
///     }
/// }
/// ```
///
/// ``Resource/request(using:)`` then applies the current credential, refreshes it first when it
/// is about to expire, and after an authentication failure refreshes once and retries once.
public protocol AuthenticatedResource: Resource {
    /// What applies credentials to this resource's requests, usually an ``OAuthAuthenticator``.
    var authenticator: any RequestAuthenticator { get }
}

extension AuthenticatedResource {
    /// The authenticator's transport (``RequestAuthenticator/transport``): set the transport
    /// once, on the authenticator, for everything of one client.
    public var transport: any HTTPTransport { authenticator.transport }

    /// Sends the request through ``authenticator`` over ``Resource/transport``.
    public func perform(_ urlRequest: consuming URLRequest) async throws -> (Data, ResponseHead) {
        try await authenticator.send(urlRequest, over: transport)
    }
}
