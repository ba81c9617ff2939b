// The README's "Sender-constrained tokens and pushed requests" snippet, compiled by every build so
// that it stays true.
import AuthenticatedRequests
import CodeFlowOAuth
import DPoP
import Foundation
import OAuthFlows

#if os(macOS) || os(Linux)
    /// README: "Sender-constrained tokens and pushed requests".
    func signInWithDPoPAndPAR(issuer: URL, tokensFolder: URL) async throws -> OAuthToken {
        let metadata = try await AuthorizationServerMetadata.discover(issuer: issuer)
        let authenticator = OAuthAuthenticator(
            store: FileTokenStore(directory: tokensFolder),
            configuration: .init(proofOfPossession: DPoPProver())  // a new P-256 key per session
        )
        let configuration = try AuthenticationConfiguration(
            metadata: metadata, client: .none(id: "my-app"),
            redirectURI: URL(string: "http://127.0.0.1/callback")!, scope: "profile",
            resources: [URL(string: "https://api.example.com/")!],  // RFC 8707
            pushesAuthorizationRequests: true  // also when the server does not require it
        )
        let manager = CodeFlowManager(configuration: configuration, userAgent: LoopbackUserAgent())
        let token = try await manager.signIn(configuring: authenticator)
        // token.tokenType == "DPoP", token.boundKey?.thumbprint is its cnf.jkt; every request with
        // it now carries `Authorization: DPoP …` and a fresh proof.
        return token
    }
#endif
