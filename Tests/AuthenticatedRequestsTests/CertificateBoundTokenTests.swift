import Foundation
import TestSupport
import Testing

@testable import AuthenticatedRequests

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The engine and certificate-bound tokens (RFC 8705 §3): a token goes out only over a transport
/// presenting its certificate; after a rotation it is refreshed first, once for all requests.
@Suite struct CertificateBoundTokenTests {
    /// A transport presenting a certificate a test can rotate, recording what it was sent.
    final class RotatingTransport: Sendable {
        let thumbprint = Locked("cert-A")
        let sent = Locked<[(token: String, certificate: String)]>([])
        var transport: InMemoryTransport {
            InMemoryTransport(clientCertificateThumbprint: { self.thumbprint.withLock { $0 } }) { request in
                let token = request.value(forHTTPHeaderField: "Authorization") ?? ""
                self.sent.withLock { $0.append((token, self.thumbprint.withLock { $0 })) }
                return try InMemoryTransport.reply(to: request, json: "{}")
            }
        }
    }

    func authenticator(_ flow: FakeFlow, transport: InMemoryTransport) -> OAuthAuthenticator {
        flow.state.withLock { $0.bindsToCertificate = true }
        return OAuthAuthenticator(flow: flow, configuration: .init(clock: TestClock(), tokenTransport: transport))
    }

    let url = URL(string: "https://api.example.com/me")!

    @Test func aTokenIsRefreshedOverTheNewCertificateBeforeItIsSentAfterARotation() async throws {
        let network = RotatingTransport()
        let flow = FakeFlow()
        let authenticator = authenticator(flow, transport: network.transport)
        _ = try await authenticator.send(URLRequest(url: url), over: network.transport)
        #expect(try await authenticator.currentCredential()?.certificateThumbprint == "cert-A")

        network.thumbprint.withLock { $0 = "cert-B" }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                group.addTask { _ = try await authenticator.send(URLRequest(url: self.url), over: network.transport) }
            }
            try await group.waitForAll()
        }
        #expect(flow.refreshCalls == 1, "one refresh for every request that found the rotation")
        let token = try #require(try await authenticator.currentCredential())
        #expect(token.certificateThumbprint == "cert-B")
        let sent = network.sent.withLock { $0 }
        #expect(sent.count == 11)
        #expect(sent.filter { $0.token == "Bearer access-1" }.allSatisfy { $0.certificate == "cert-A" })
        #expect(sent.dropFirst().allSatisfy { $0.token == "Bearer access-2" }, "the old token never went out again")
    }

    @Test func aTokenBoundToACertificateTheResourceTransportDoesNotPresentIsNeverSent() async throws {
        let tokenSide = RotatingTransport()
        let resourceSide = RotatingTransport()
        resourceSide.thumbprint.withLock { $0 = "cert-other" }
        let flow = FakeFlow()
        let authenticator = authenticator(flow, transport: tokenSide.transport)
        let error = await #expect(throws: AuthenticationError.self) {
            _ = try await authenticator.send(URLRequest(url: url), over: resourceSide.transport)
        }
        #expect(error?.code == .certificateMismatch)
        #expect(resourceSide.sent.withLock { $0.isEmpty }, "nothing reached the resource")
        #expect(flow.refreshCalls == 1, "one refresh on the token transport, not a loop")
    }

    @Test func aTokenWithoutACertificateIsSentOverAnyTransport() async throws {
        let network = RotatingTransport()
        let flow = FakeFlow()
        let authenticator = OAuthAuthenticator(
            flow: flow, configuration: .init(clock: TestClock(), tokenTransport: network.transport))
        _ = try await authenticator.send(URLRequest(url: url), over: network.transport)
        network.thumbprint.withLock { $0 = "cert-B" }
        _ = try await authenticator.send(URLRequest(url: url), over: network.transport)
        #expect(flow.refreshCalls == 0)
    }

    @Test func aTransportThatCannotReadItsCertificateFailsTheRequestBeforeSending() async throws {
        let flow = FakeFlow()
        let failing = InMemoryTransport(clientCertificateThumbprint: {
            throw ClientIdentityError(.unreadable, "/run/secrets/tls.crt cannot be read.")
        }) { request in try InMemoryTransport.reply(to: request, json: "{}") }
        let authenticator = OAuthAuthenticator(
            flow: flow, token: OAuthToken(accessToken: "bound", certificateThumbprint: "cert-A"),
            configuration: .init(clock: TestClock(), tokenTransport: failing))
        let error = await #expect(throws: ClientIdentityError.self) {
            _ = try await authenticator.send(URLRequest(url: url), over: failing)
        }
        #expect(error?.code == .unreadable)
    }

    @Test func theCertificateIsKeptWithTheStoredToken() throws {
        let token = OAuthToken(accessToken: "a", certificateThumbprint: "x5t-value")
        let data = try JSONEncoder().encode(token)
        #expect(String(decoding: data, as: UTF8.self).contains(#""x5t#S256":"x5t-value""#))
        #expect(try JSONDecoder().decode(OAuthToken.self, from: data).certificateThumbprint == "x5t-value")
        #expect(token.description.contains("certificateThumbprint: x5t-value"))
    }
}
