import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import TestSupport
import Testing

/// JAR (RFC 9101): the request's parameters become the request object's claims, and the URL
/// carries only `client_id`, `request` and what the configuration repeats.
struct RequestObjectTests {
    /// Keeps the claims it was asked to sign, and signs nothing.
    final class RecordingSigner: RequestObjectSigner {
        let signed = Locked<[String: JSONValue]>([:])
        let requestObjectAlgorithm: String

        init(algorithm: String = "ES256") { requestObjectAlgorithm = algorithm }

        func requestObject(clientID: String, audience: String, parameters: [String: JSONValue]) async throws -> String {
            signed.withLock { $0 = parameters.merging(["_aud": .string(audience)]) { $1 } }
            return "header.claims.signature"
        }
    }

    /// A user agent that keeps the URL it is asked to open, then stops the flow.
    struct CapturingUserAgent: AuthorizationUserAgent {
        struct Stop: Error {}
        let opened = Locked<URL?>(nil)

        struct Session: AuthorizationUserAgentSession {
            let redirectURI: URL
            let opened: Locked<URL?>
            func present(_ authorizationURL: URL) async throws -> URL {
                opened.withLock { $0 = authorizationURL }
                throw Stop()
            }
            func close() async {}
        }

        func begin(redirectURI: URL) async throws -> any AuthorizationUserAgentSession {
            Session(redirectURI: redirectURI, opened: opened)
        }
    }

    /// The URL `configuration`'s flow opens.
    func openedURL(_ configuration: AuthenticationConfiguration) async throws -> URL {
        let agent = CapturingUserAgent()
        _ = try? await CodeFlowManager(configuration: configuration, userAgent: agent).authorize()
        return try #require(agent.opened.withLock { $0 })
    }

    func configuration(signer: RecordingSigner) -> AuthenticationConfiguration {
        var configuration = AuthenticationConfiguration(
            authorizationEndpoint: authorizeURL, tokenEndpoint: tokenURL, client: .none(id: "app"),
            redirectURI: redirectURI, scope: "openid", issuer: "https://auth.example.com",
            resources: [URL(string: "https://a.example.com")!, URL(string: "https://b.example.com")!],
            parametersRepeatedInBrowser: ["scope"])
        configuration.authorizationDetails = [
            AuthorizationDetail(type: "t", fields: ["actions": .array([.string("read")])])
        ]
        configuration.requestObjectSigner = signer
        return configuration
    }

    @Test func theParametersBecomeClaimsAndTheURLCarriesTheRequestObject() async throws {
        let signer = RecordingSigner()
        let configuration = configuration(signer: signer)
        let sent = query(try await openedURL(configuration))
        let own = Set(query(authorizeURL).keys)  // the endpoint's own query items stay
        #expect(Set(sent.keys).subtracting(own) == ["client_id", "request", "scope"])
        #expect(sent["request"] == "header.claims.signature")
        let claims = signer.signed.withLock { $0 }
        #expect(claims["_aud"] == .string("https://auth.example.com"), "the issuer is the audience")
        #expect(claims["client_id"] == .string("app"))
        #expect(claims["response_type"] == .string("code"))
        #expect(claims["resource"] == .array([.string("https://a.example.com"), .string("https://b.example.com")]))
        #expect(
            claims["authorization_details"]
                == .array([.object(["type": .string("t"), "actions": .array([.string("read")])])]))
        #expect(claims["code_challenge_method"] == .string("S256"))
    }

    @Test func aServerThatListsOtherAlgorithmsGetsNothing() async throws {
        let signer = RecordingSigner(algorithm: "ES256")
        var configuration = configuration(signer: signer)
        configuration.requestObjectSigningAlgorithms = ["PS256"]
        let agent = CapturingUserAgent()
        let error = await #expect(throws: CodeFlowError.self) {
            _ = try await CodeFlowManager(configuration: configuration, userAgent: agent).authorize()
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(agent.opened.withLock { $0 } == nil, "no browser")
        #expect(signer.signed.withLock { $0.isEmpty }, "nothing was signed")
    }
}
