import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

@testable import ResourceDiscovery

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Every secret the client holds (its secret, the registration access token, the initial access
/// token, the tokens) stays out of `dump`, descriptions and every error, including errors built
/// from what a server says back.
@Suite struct HeldSecretsTests {
    static let initialAccessToken = "IAT-initial-secret-0001"
    static let registrationAccessToken = "RAT-registration-secret-0002"

    func render(_ value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), dumped]
    }

    func expectAbsent(_ secrets: [String], in value: Any, sourceLocation: SourceLocation = #_sourceLocation) {
        for text in render(value) {
            for secret in secrets {
                #expect(!text.contains(secret), "\(secret) shown in: \(text)", sourceLocation: sourceLocation)
            }
        }
    }

    func policy() -> ClientRegistrationPolicy {
        var policy = ClientRegistrationPolicy.dynamic(clientName: "Notes")
        policy.initialAccessToken = Self.initialAccessToken
        policy.preRegistered["https://other.example.com"] = .clientSecretBasic(id: "pre", secret: "CS-pre-secret-3")
        return policy
    }

    @Test func theInitialAccessTokenIsInNoDumpOrDescription() async throws {
        let network = ResourceNetwork()
        let signIn = network.signIn(policy: policy())
        let secrets = [Self.initialAccessToken, "CS-pre-secret-3"]
        expectAbsent(secrets, in: policy())
        #expect(policy().description.contains("initialAccessToken: <redacted>"))
        expectAbsent(secrets, in: signIn.registrar)
        expectAbsent(secrets, in: signIn)
        let flow = try await signIn.flow()
        expectAbsent(secrets, in: flow)
        let authenticator = try await signIn.authenticator()
        _ = try await Probe(authenticator: authenticator, url: URL(string: "https://api.example.com/mcp")!).request()
        let token = try #require(try await authenticator.currentCredential())
        expectAbsent(secrets + [token.accessToken, token.refreshToken ?? "none"], in: authenticator)
    }

    @Test func aTokenEndpointErrorThatRepeatsTheRegistrationAccessTokenDoesNotShowIt() async throws {
        let rat = Self.registrationAccessToken
        let network = ResourceNetwork(
            .init(
                registrationReply:
                    #"{"client_id":"client-1","token_endpoint_auth_method":"client_secret_basic","#
                    + #""client_secret":"CS-registered-secret-4","registration_access_token":"\#(rat)","#
                    + #""registration_client_uri":"https://auth.example.com/register/client-1"}"#,
                tokenError:
                    #"invalid_client","error_description":"unknown client; registration \#(rat) initial \#(Self.initialAccessToken) secret CS-registered-secret-4"#
            ))
        let authenticator = try await network.signIn(policy: policy()).authenticator()
        let error = await #expect(throws: (any Error).self) {
            try await Probe(authenticator: authenticator, url: URL(string: "https://api.example.com/mcp")!).request()
        }
        let text = String(describing: try #require(error)) + String(reflecting: try #require(error))
        for secret in [rat, Self.initialAccessToken, "CS-registered-secret-4"] {
            #expect(!text.contains(secret), "\(secret) shown in: \(text)")
        }
        #expect(text.contains("unknown client"), "the server's words stay: \(text)")
    }

    @Test func aRegistrationReplyThatQuotesItsOwnRegistrationAccessTokenIsNotShownInTheError() async throws {
        let rat = Self.registrationAccessToken
        let network = ResourceNetwork(
            .init(
                registrationReply:
                    #"{"client_id":"client-1","#
                    + #""token_endpoint_auth_method":"tls_client_auth \#(rat)","registration_access_token":"\#(rat)"}"#
            ))
        let error = await #expect(throws: ClientRegistrationError.self) {
            _ = try await network.signIn(policy: policy()).authenticator()
        }
        #expect(error?.code == .unsupportedAuthenticationMethod)
        for text in render(try #require(error)) { #expect(!text.contains(rat), "\(text)") }
        #expect(try #require(error).message.contains("tls_client_auth"))
    }
}

/// A token obtained for a resource is applied only to that resource's URLs.
@Suite struct ResourceBoundaryEnforcementTests {
    let resource = URL(string: "https://api.example.com/mcp")!

    @Test(arguments: ["https://api.example.com/other", "https://evil.example.com/mcp", "http://api.example.com/mcp"])
    func aSignedInResourcesTokenIsNeverSentToAnotherURL(_ foreign: String) async throws {
        let network = ResourceNetwork()
        let authenticator = try await network.signIn().authenticator()
        _ = try await Probe(authenticator: authenticator, url: resource).request()
        let before = network.requests.withLock { $0.count }
        let error = await #expect(throws: AuthenticationError.self) {
            try await Probe(authenticator: authenticator, url: URL(string: foreign)!).request()
        }
        #expect(error?.code == .foreignResource)
        #expect(network.requests.withLock { $0.count } == before, "nothing was sent, nothing refreshed")
    }

    @Test func aGrantsTokenForOneResourceIsNeverSentToAnother() async throws {
        let network = ResourceNetwork()
        let grant = try await ResourceGrant.discover(
            resources: [resource], registration: .dynamic(clientName: "Notes"),
            method: .browser(ResourceNetwork.Browser(issuer: "https://auth.example.com")), store: InMemoryTokenStore(),
            configuration: .init(clock: network.clock, tokenTransport: network.transport))
        let authenticator = try grant.authenticator(for: resource)
        _ = try await Probe(authenticator: authenticator, url: resource).request()
        let before = network.requests.withLock { $0.count }
        let error = await #expect(throws: AuthenticationError.self) {
            try await Probe(authenticator: authenticator, url: URL(string: "https://api.example.com/calendar")!)
                .request()
        }
        #expect(error?.code == .foreignResource)
        #expect(network.requests.withLock { $0.count } == before)
    }
}
